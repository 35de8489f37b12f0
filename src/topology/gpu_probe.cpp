#include "fabricbench/topology/gpu_probe.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace fabricbench {

ConcurrentCopies RecordedGpuSource::measure_concurrent(const std::vector<CopyGroup>& groups) {
  asked_ = groups;
  ConcurrentCopies out;
  out.method = concurrent_.method;
  out.notes = concurrent_.notes;
  for (const CopyGroup& g : groups)
    for (const ConcurrentCopy& c : concurrent_.copies)
      if (c.scope == g.scope && c.gpus == g.gpus) out.copies.push_back(c);
  return out;
}

#if !FABRICBENCH_HAVE_CUDA
namespace {

// Without CUDA there is no runtime to ask; the sysfs facts still stand.
class NoCudaSource final : public GpuInfoSource {
 public:
  GpuReport query() override {
    GpuReport report;
    report.unavailable = "this build has no CUDA support";
    return report;
  }
  GpuBandwidth measure() override { return {}; }
};

}  // namespace

std::unique_ptr<GpuInfoSource> make_system_gpu_source() { return std::make_unique<NoCudaSource>(); }
#endif

std::vector<CopyGroup> contention_groups(const NodeTopology& node) {
  std::vector<CopyGroup> out;
  std::set<std::vector<int>> seen;
  const auto cuda_indices = [&](const std::vector<std::string>& bus_ids) {
    std::vector<int> out_indices;
    for (const GpuInfo& g : node.gpus)
      if (g.index && std::find(bus_ids.begin(), bus_ids.end(), g.pci_bus_id) != bus_ids.end())
        out_indices.push_back(*g.index);
    std::sort(out_indices.begin(), out_indices.end());
    return out_indices;
  };
  const auto add = [&](std::string scope, std::optional<std::string> bridge, std::vector<int> gpus) {
    if (gpus.size() < 2 || !seen.insert(gpus).second) return;
    out.push_back({std::move(scope), std::move(bridge), std::move(gpus)});
  };
  for (const BridgeRole role : {BridgeRole::switch_upstream, BridgeRole::root_port})
    for (const PcieBridge& b : node.pcie_bridges)
      if (b.role == role)
        add(fmt::format("{} {}", role == BridgeRole::root_port ? "root port" : "PCIe switch", b.pci_bus_id),
            b.pci_bus_id, cuda_indices(b.gpus));
  std::vector<std::string> all;
  for (const GpuInfo& g : node.gpus) all.push_back(g.pci_bus_id);
  add("all GPUs", std::nullopt, cuda_indices(all));
  return out;
}

}  // namespace fabricbench
