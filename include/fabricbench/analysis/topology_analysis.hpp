#pragma once
// The cluster view: nodes grouped by identical configuration, and anomalies
// named by host and device. Pure logic over records, so it is tested with
// recorded values.

#include <vector>

#include "fabricbench/records/topology.hpp"

namespace fabricbench {

// What is compared, and when a difference is an anomaly:
// - GPU count, GPU model and driver version against the most common value;
// - a PCIe link narrower than its max width, or at a lower generation than
//   its max and than its peers (same GPU model across the cluster); a link
//   below its max like all its peers is a note, since idle GPUs lower their
//   link speed;
// - fewer active NVLink links than peers, naming the inactive links;
// - an RDMA port not ACTIVE, an Ethernet port down, an active RDMA port
//   slower than the fastest of the same link layer;
// - RDMA NICs on a GPU node without GPUDirect RDMA (status "absent");
// - a GPU whose nearest NIC is on another NUMA node (SYS);
// - host-to-device or device-to-host bandwidth below `slow_fraction` of the
//   peers' median.
inline constexpr double slow_fraction = 0.75;
ClusterTopology analyze_cluster(std::vector<NodeTopology> nodes);

// The gathered cluster (topology/topology_probe.hpp) judged in place: its
// nodes grouped and analysed as analyze_cluster does, the anomalies found
// while gathering kept first, then the configuration rules' findings
// (analysis/config_rules.hpp).
void judge_cluster(ClusterTopology& cluster);

// The one-line configuration of a node, as the grouping compares it.
std::string node_signature(const NodeTopology& node);

// The network line rate of one node in Gb/s: the sum of its active RDMA ports
// (InfiniBand or RoCE) when it has any, else of its Ethernet interfaces that
// are up; nullopt when no rate is known.
std::optional<double> network_gbit(const NodeTopology& node);

// The smallest network_gbit over the nodes (what a collective across all of
// them can count on); nullopt when any node's rate is unknown.
std::optional<double> network_gbit_per_node(const ClusterTopology& cluster);

// "GPU 3 (0000:5d:00.0)": the index when known, else the position.
std::string gpu_label(const GpuInfo& gpu, std::size_t position);

}  // namespace fabricbench
