#pragma once
// The topology as one screen for a person; it only formats.

#include <iosfwd>
#include <string>
#include <vector>

#include "fabricbench/records/topology.hpp"

namespace fabricbench {

// The human summary: cluster header, each configuration with the facts of
// its first node, then the anomalies.
void write_topology_summary(const ClusterTopology& cluster, std::ostream& out);

// What is inside one node, a line each (the text summary indents them, the
// HTML lists them): each PCIe switch holding GPUs (uplink, GPUs, downstream
// sum and ratio), ACS on the bridges between GPUs, the IOMMU, what is
// virtual, and host copies at once against alone.
std::vector<std::string> inside_node_lines(const NodeTopology& node);

}  // namespace fabricbench
