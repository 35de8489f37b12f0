#include "fabricbench/analysis/wire_rate.hpp"

#include <algorithm>

#include "fabricbench/analysis/verdict.hpp"

namespace fabricbench {

std::optional<NicWireRate> nic_wire_rate(double busbw_gbs, int ranks, int nodes, int nics_per_node,
                                         const std::optional<std::string>& algorithm) {
  if (nodes < 2 || ranks < nodes || ranks % nodes != 0 || nics_per_node < 1 || !(busbw_gbs >= 0)) return std::nullopt;
  const double n = ranks;
  const double k = nodes;
  const double m = nics_per_node;
  NicWireRate w;
  w.nics_per_node = nics_per_node;
  const std::string a = algorithm.value_or("");
  if (a == "RING") {
    w.basis = "ring";
    w.gbs = busbw_gbs / m;
  } else if (a.rfind("COLLNET", 0) == 0) {
    w.basis = "in_network";
    w.gbs = busbw_gbs * n / (2 * (n - 1)) / m;
  } else if (a == "NVLS") {
    w.basis = "nvlink";
  } else {
    w.basis = "lower_bound";
    w.gbs = busbw_gbs * (k - 1) / k * n / (n - 1) / m;
  }
  return w;
}

std::vector<SweepRecord> with_nic_wire(std::span<const SweepRecord> records, int nodes, int nics_per_node) {
  std::vector<SweepRecord> out(records.begin(), records.end());
  for (SweepRecord& r : out) {
    if (r.op != Op::allreduce || !r.timing) continue;
    const std::optional<std::string> algorithm = r.choice ? r.choice->algorithm : std::nullopt;
    r.nic_wire = nic_wire_rate(r.timing->busbw_gbs, r.ranks, nodes, nics_per_node, algorithm);
  }
  return out;
}

int wire_nics_per_node(const std::optional<ClusterTopology>& topology, int ranks_per_node) {
  if (topology)
    if (const int m = detect_hardware(*topology).rdma_nics; m > 0) return m;
  return std::max(1, ranks_per_node);
}

}  // namespace fabricbench
