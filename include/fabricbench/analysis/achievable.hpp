#pragma once
// "% of achievable" per layer of the fabric: each measured figure held
// against the physical figure of the part that carries it, with its source.
//   host <-> device   the slowest GPU's pinned copy against its PCIe link at
//                     its maximum generation and width (PCI-SIG base
//                     specifications: per lane each way 0.25, 0.5, 0.985,
//                     1.969, 3.938 and 7.563 GB/s for Gen1 to Gen6);
//   within a node     the slowest measured GPU pair's copy against its
//                     NVLinks (links x 25 GB/s each way for NVLink 2 to 4,
//                     50 GB/s for NVLink 5: NVIDIA's V100, A100, H100 and
//                     B200 datasheets) or, without NVLink, the slower GPU's
//                     PCIe link;
//   across nodes      the median node pair of the pair matrix (every rail at
//                     once) against the node's line rate (its active RDMA
//                     ports, else its Ethernet interfaces, as the probe read
//                     them from sysfs), and the worst pair.
// A layer whose figure or part was not measured is said so, never a zero.
// These are INFO verdicts (kind "achievable"): the references judge, these
// say how far a figure is from the hardware's bound.

#include <vector>

#include "fabricbench/records/verdict.hpp"
#include "fabricbench/results/result.hpp"

namespace fabricbench {

// GB/s each way of one NVLink of `version` (2 to 5); 0 outside.
double nvlink_gbs(int version);

std::vector<Verdict> achievable_verdicts(const RunResult& result);

}  // namespace fabricbench
