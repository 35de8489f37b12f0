#include "fabricbench/analysis/node_analysis.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fabricbench/analysis/topology_analysis.hpp"
#include "fabricbench/core/stats.hpp"

namespace fabricbench {
namespace {

std::string link_text(const PcieLink& l) {
  const std::optional<int> gen = l.max_gen ? l.max_gen : l.current_gen;
  const std::optional<int> width = l.current_width ? l.current_width : l.max_width;
  return fmt::format("Gen{} x{}", gen ? std::to_string(*gen) : "?", width ? std::to_string(*width) : "?");
}

// CUDA indices (else positions) of the GPUs with these bus ids.
std::vector<int> indices_of(const NodeTopology& node, const std::vector<std::string>& bus_ids) {
  std::vector<int> out;
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuInfo& g = node.gpus[i];
    if (std::find(bus_ids.begin(), bus_ids.end(), g.pci_bus_id) != bus_ids.end())
      out.push_back(g.index ? *g.index : static_cast<int>(i));
  }
  return out;
}

const GpuInfo* gpu_by_index(const NodeTopology& node, int index) {
  for (const GpuInfo& g : node.gpus)
    if (g.index == index) return &g;
  return nullptr;
}

const PcieBridge* bridge_by_id(const NodeTopology& node, const std::optional<std::string>& id) {
  if (!id) return nullptr;
  for (const PcieBridge& b : node.pcie_bridges)
    if (b.pci_bus_id == *id) return &b;
  return nullptr;
}

std::string model_below(const NodeTopology& node, const PcieBridge& b) {
  for (const GpuInfo& g : node.gpus)
    if (!b.gpus.empty() && g.pci_bus_id == b.gpus.front()) return g.name.value_or("unknown GPU");
  return "unknown GPU";
}

void check_oversubscription(ClusterTopology& cluster) {
  std::map<std::string, double> lowest;  // by GPU model
  for (const NodeTopology& n : cluster.nodes)
    for (const PcieBridge& b : n.pcie_bridges)
      if (b.role == BridgeRole::switch_upstream && b.oversubscription && !b.gpus.empty()) {
        const std::string m = model_below(n, b);
        lowest[m] = lowest.contains(m) ? std::min(lowest[m], *b.oversubscription) : *b.oversubscription;
      }
  for (const NodeTopology& n : cluster.nodes)
    for (const PcieBridge& b : n.pcie_bridges) {
      if (b.role != BridgeRole::switch_upstream || !b.oversubscription || b.gpus.empty()) continue;
      const double best = lowest[model_below(n, b)];
      // Ratios are computed from the same lane rates, so equal sharing is equal.
      if (*b.oversubscription <= 1.0 + 1e-9 || *b.oversubscription <= best * 1.05) continue;
      const int others = b.occupied_ports.value_or(0) - static_cast<int>(b.gpus.size());
      cluster.anomalies.push_back(
          {"pcie_oversubscribed", n.host.hostname, fmt::format("PCIe switch {}", b.pci_bus_id),
           fmt::format("{}{} share one {} uplink ({:.1f} GB/s) under {:.1f} GB/s of downstream links: {:.1f}:1, "
                       "where its peers have {:.1f}:1; spread the GPUs over more switches, or expect host copies "
                       "at once to share it",
                       gpu_list(indices_of(n, b.gpus)),
                       others > 0 ? fmt::format(" and {} other device{}", others, others == 1 ? "" : "s") : "",
                       link_text(b.link), b.uplink_gbs.value_or(0), b.downstream_gbs.value_or(0), *b.oversubscription,
                       best)});
    }
}

void check_contention(ClusterTopology& cluster) {
  for (const NodeTopology& n : cluster.nodes)
    for (const ConcurrentCopy& c : n.host_copy_contention)
      if (const auto sentence = judge_contention(c, bridge_by_id(n, c.bridge)))
        cluster.anomalies.push_back({"pcie_contention", n.host.hostname, c.scope, *sentence});
}

void check_acs(ClusterTopology& cluster) {
  for (const NodeTopology& n : cluster.nodes) {
    if (n.gpus.size() < 2) continue;
    std::vector<std::string> ids;
    std::set<std::string> gpus;
    for (const PcieBridge& b : n.pcie_bridges) {
      // On the path between two GPUs: some GPU is below it and some is not.
      // A switch's upstream port redirects nothing (it has no peers below it to redirect between).
      if (b.role == BridgeRole::switch_upstream) continue;
      if (b.acs != AcsState::redirect || b.gpus.empty() || b.gpus.size() >= n.gpus.size()) continue;
      ids.push_back(fmt::format("{} (ACSCtl 0x{:04x})", b.pci_bus_id, b.acs_control.value_or(0)));
      gpus.insert(b.gpus.begin(), b.gpus.end());
    }
    if (ids.empty()) continue;
    cluster.anomalies.push_back(
        {"acs_redirect", n.host.hostname, gpu_list(indices_of(n, {gpus.begin(), gpus.end()})),
         fmt::format("ACS redirects peer-to-peer requests up to the root complex on {} PCIe bridge{} between GPUs: "
                     "{}; GPU peer traffic takes the long way or fails. Fix: turn ACS off in the BIOS, or as root "
                     "`setpci -s <bridge> ECAP_ACS+0x6.w=0000` on each (not across a reboot), unless a VM host "
                     "needs the isolation",
                     ids.size(), ids.size() == 1 ? "" : "s", fmt::join(ids, ", "))});
  }
}

void check_iommu(ClusterTopology& cluster) {
  for (const NodeTopology& n : cluster.nodes) {
    if (n.gpus.empty() || !n.iommu || n.iommu->mode != IommuMode::translated) continue;
    cluster.anomalies.push_back(
        {"iommu_translated", n.host.hostname, "",
         fmt::format("the IOMMU translates DMA (default domain {}{}): GPU peer-to-peer and GPUDirect RDMA traffic "
                     "is remapped, slower or refused. Fix: boot with iommu=pt (passthrough; with intel_iommu=on or "
                     "amd_iommu=on kept) unless the node hosts VMs that need translation",
                     fmt::join(n.iommu->domain_types, ", "),
                     n.iommu->kernel_parameters.empty()
                         ? std::string("; no iommu parameter on the kernel command line")
                         : fmt::format("; kernel command line {}", fmt::join(n.iommu->kernel_parameters, " ")))});
  }
}

void check_p2p(ClusterTopology& cluster) {
  for (const NodeTopology& n : cluster.nodes) {
    std::vector<std::string> pairs;
    const std::size_t count = std::min(n.p2p_access.size(), n.d2d_gbs.size());
    for (std::size_t i = 0; i < count; ++i) {
      for (std::size_t j = 0; j < n.p2p_access[i].size() && j < n.d2d_gbs[i].size(); ++j) {
        if (i == j || n.p2p_access[i][j] != true || !n.d2d_gbs[i][j]) continue;
        const GpuInfo* from = gpu_by_index(n, static_cast<int>(i));
        const GpuInfo* to = gpu_by_index(n, static_cast<int>(j));
        if (from == nullptr || to == nullptr || !from->d2h_gbs || !to->h2d_gbs) continue;
        const double hop = std::min(*from->d2h_gbs, *to->h2d_gbs);
        const double d2d = *n.d2d_gbs[i][j];
        const bool nvlink =
            i < n.gpu_matrix.size() && j < n.gpu_matrix[i].size() && n.gpu_matrix[i][j].rfind("NV", 0) == 0;
        const bool slow = nvlink ? d2d <= 1.25 * hop : d2d < slow_fraction * hop;
        if (slow)
          pairs.push_back(fmt::format("{}->{} {:.1f} GB/s{} (one PCIe hop {:.1f})", i, j, d2d,
                                      nvlink ? fmt::format(" over {}", n.gpu_matrix[i][j]) : "", hop));
      }
    }
    if (pairs.empty()) continue;
    const std::size_t shown = std::min<std::size_t>(pairs.size(), 6);
    cluster.anomalies.push_back(
        {"p2p_through_host", n.host.hostname, fmt::format("{} GPU pair{}", pairs.size(), pairs.size() == 1 ? "" : "s"),
         fmt::format("CUDA reports peer access, but the copies run at host-path speed: {}{}; the traffic is "
                     "staged through host memory or throttled by a root complex. Check ACS and the IOMMU (above), "
                     "and the BIOS' PCIe peer-to-peer setting",
                     fmt::join(pairs.begin(), pairs.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
                     pairs.size() > shown ? fmt::format(" and {} more", pairs.size() - shown) : "")});
  }
}

}  // namespace

std::optional<std::string> judge_contention(const ConcurrentCopy& copy, const PcieBridge* shared) {
  std::vector<double> alone;
  std::vector<double> at_once;
  for (std::size_t i = 0; i < copy.gpus.size() && i < copy.alone_gbs.size() && i < copy.at_once_gbs.size(); ++i) {
    if (!copy.alone_gbs[i] || !copy.at_once_gbs[i]) continue;
    alone.push_back(*copy.alone_gbs[i]);
    at_once.push_back(*copy.at_once_gbs[i]);
  }
  if (at_once.size() < 2) return std::nullopt;
  const double a = median(alone);
  const double b = median(at_once);
  if (!(b < slow_fraction * a)) return std::nullopt;
  const std::string who = gpu_list(copy.gpus);
  const std::string figures =
      fmt::format("{} at once get {:.1f} GB/s each of {:.1f} alone, {}", at_once.size(), b, a,
                  copy.direction == CopyDirection::host_to_device ? "host-to-device" : "device-to-host");
  if (shared != nullptr && shared->role == BridgeRole::switch_upstream)
    return fmt::format("{} share one {} uplink (PCIe switch {}): {}", who, link_text(shared->link), shared->pci_bus_id,
                       figures);
  if (shared != nullptr)
    return fmt::format("{} share one {} link (root port {}): {}", who, link_text(shared->link), shared->pci_bus_id,
                       figures);
  return fmt::format("{}, all copying: {}; a shared link, the root complex or host memory limits them", who, figures);
}

std::string virtualization_summary(const NodeTopology& node) {
  std::vector<std::string> parts;
  const Virtualization v = node.virtualization.value_or(Virtualization{});
  std::vector<std::string> signs;
  if (v.hypervisor_flag == true) signs.emplace_back("hypervisor CPU flag");
  if (v.hypervisor && v.platform) signs.push_back(fmt::format("DMI '{}'", *v.platform));
  if (v.virtio_devices > 0)
    signs.push_back(fmt::format("{} virtio device{}", v.virtio_devices, v.virtio_devices == 1 ? "" : "s"));
  if (v.hypervisor || v.hypervisor_flag == true)
    parts.push_back(fmt::format("virtual machine{} ({})", v.hypervisor ? fmt::format(" on {}", *v.hypervisor) : "",
                                fmt::join(signs, ", ")));
  else if (v.virtio_devices > 0)
    parts.push_back(fmt::format("likely a virtual machine ({})", fmt::join(signs, ", ")));
  std::map<std::string, std::vector<int>> by_mode;
  std::map<std::string, std::vector<int>> by_bus;
  std::vector<std::string> mig;
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuInfo& g = node.gpus[i];
    const int shown = g.index ? *g.index : static_cast<int>(i);
    if (g.virtualization && *g.virtualization != "none") by_mode[*g.virtualization].push_back(shown);
    by_bus[g.pci_bus_id].push_back(shown);
  }
  std::set<std::string> mig_seen;
  for (const GpuInfo& g : node.gpus) {
    if (mig_seen.contains(g.pci_bus_id)) continue;
    if (g.mig_instances || g.mig_mode == "enabled") {
      mig_seen.insert(g.pci_bus_id);
      mig.push_back(g.mig_instances ? fmt::format("{} split into {} MIG instance{}", g.pci_bus_id, *g.mig_instances,
                                                  *g.mig_instances == 1 ? "" : "s")
                                    : fmt::format("{} in MIG mode", g.pci_bus_id));
    }
  }
  static const std::map<std::string, std::string> what{
      {"vgpu", "NVIDIA vGPUs (time or memory shares of a physical GPU)"},
      {"passthrough", "passed through to this VM"},
      {"host_vgpu", "hosting vGPUs for VMs"},
      {"host_vsga", "hosting shared graphics for VMs"},
      {"sriov_vf", "SR-IOV virtual functions"}};
  for (const auto& [mode, gpus] : by_mode) {
    const auto it = what.find(mode);
    parts.push_back(fmt::format("{} {}", gpu_list(gpus), it != what.end() ? it->second : mode));
  }
  if (!mig.empty()) parts.push_back(fmt::format("MIG: {}", fmt::join(mig, ", ")));
  int shared_devices = 0;
  int physical = 0;
  for (const auto& [bus, gpus] : by_bus)
    if (gpus.size() > 1) {
      shared_devices += static_cast<int>(gpus.size());
      ++physical;
    }
  if (shared_devices > 0)
    parts.push_back(fmt::format("{} CUDA devices are slices of {} physical GPU{}", shared_devices, physical,
                                physical == 1 ? "" : "s"));
  return fmt::format("{}", fmt::join(parts, "; "));
}

void check_inside_nodes(ClusterTopology& cluster) {
  check_oversubscription(cluster);
  check_contention(cluster);
  check_acs(cluster);
  check_iommu(cluster);
  check_p2p(cluster);
}

}  // namespace fabricbench
