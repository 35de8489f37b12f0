#include "fabricbench/engine/wire_rate.hpp"

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

}  // namespace fabricbench
