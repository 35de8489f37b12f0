#pragma once
// Probing one node, and gathering every node's record to rank 0.

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/comm/layout.hpp"
#include "fabricbench/records/topology.hpp"
#include "fabricbench/topology/gpu_probe.hpp"
#include "fabricbench/topology/sysfs_probe.hpp"

namespace fabricbench {

struct TopologyOptions {
  ProbeRoots roots;
  bool measure = true;  // time host<->device and device<->device copies
  // Every rank's configuration record (node_config.hpp), gathered and
  // checked; its findings join the anomalies.
  bool configuration = true;
};

// One node's record: sysfs/procfs facts, merged by PCI bus id with what
// `gpus` reports (sysfs wins for PCIe link and NUMA node, which it reads
// first-hand), the GPU-GPU and GPU-NIC matrices, and, when `measure`, the
// copy bandwidths. Never throws for missing or odd facts.
NodeTopology probe_node(const ProbeRoots& roots, GpuInfoSource& source, bool measure);

// Collective over `world`: the first rank of each node probes it with the
// system GPU source, the records travel as JSON, and every rank returns the
// nodes' records (by node index of `layout`), not yet judged: judge_cluster
// (analysis/topology_analysis.hpp) groups them and names the anomalies. With
// `options.configuration`, every rank also reports its configuration
// (gather_configuration).
ClusterTopology gather_topology(const Comm& world, const Layout& layout, const TopologyOptions& options);

// The cluster's nodes from the record each world rank sent (empty from ranks
// that do not lead a node), not yet judged. A record that does not parse, or names no node of
// `layout`, is not dropped: it becomes a "topology_unreadable" anomaly
// naming the sender's node (by the layout's hostname).
ClusterTopology cluster_from_records(const std::vector<std::string>& records, const Layout& layout);

}  // namespace fabricbench
