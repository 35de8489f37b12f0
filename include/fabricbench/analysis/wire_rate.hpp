#pragma once
// The rate each NIC carries in a multi-node all-reduce, from the measured
// bus bandwidth. busbw is a per-rank figure (nccl-tests' definition: what
// each link of a ring moves), so on k nodes it can exceed one NIC's line
// rate without anything being wrong; this says what each NIC really moved.
//
// n ranks on k nodes (n/k per node), m NICs per node, message S bytes in
// time t, busbw = 2(n-1)/n x S/t. What leaves a node each way per second:
//   ring         every ring enters and leaves each node once, and each ring
//                edge carries 2(n-1)/n of the ring's share: busbw in all,
//                so busbw / m per NIC (busbw x k/n with one NIC per rank);
//   in-network   CollNet (SHARP): each node sends its node-reduced S once to
//                the switch: S/t = busbw x n/(2(n-1)), / m per NIC;
//   lower bound  any algorithm without in-network reduction: the k nodes'
//                node-reduced partial sums must meet, which takes at least
//                2(k-1)/k x S per node (the all-reduce bound), i.e.
//                busbw x (k-1)/k x n/(n-1) / m per NIC, busbw x (k-1)/(n-1)
//                with one NIC per rank. NCCL's tree and NVLS_TREE reach it at
//                k = 2; used for them, and when the algorithm is unknown
//                (MPI), as "at least".
// Assumed: traffic spread evenly over the node's NICs, no other traffic.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fabricbench/records/sweep.hpp"
#include "fabricbench/records/topology.hpp"

namespace fabricbench {

// nullopt unless it applies: k >= 2 nodes, n a multiple of k, m >= 1.
// `algorithm` is NCCL's name (RING, TREE, NVLS_TREE, COLLNET_DIRECT, ...) or
// nullopt when unknown. NVLS across nodes means one NVLink domain spanning
// them (multi-node NVLink): no NIC carries the data (basis nvlink, no rate).
std::optional<NicWireRate> nic_wire_rate(double busbw_gbs, int ranks, int nodes, int nics_per_node,
                                         const std::optional<std::string>& algorithm);

// The records of one point with the multi-node all-reduce's NIC wire rate
// filled in (nic_wire_rate) from their busbw and algorithm, on
// `nodes` nodes with `nics_per_node` NICs each; other records unchanged.
std::vector<SweepRecord> with_nic_wire(std::span<const SweepRecord> records, int nodes, int nics_per_node);

// The NICs per node a multi-node all-reduce's wire rate is spread over: the
// active RDMA NICs the topology found (fewest over nodes), else one per rank
// (a GPU per NIC, as rail-optimised GPU nodes are built).
int wire_nics_per_node(const std::optional<ClusterTopology>& topology, int ranks_per_node);

}  // namespace fabricbench
