#pragma once
// The topology as one screen for a person; it only formats.

#include <iosfwd>

#include "fabricbench/topology/topology.hpp"

namespace fabricbench {

// The human summary: cluster header, each configuration with the facts of
// its first node, then the anomalies.
void write_topology_summary(const ClusterTopology& cluster, std::ostream& out);

}  // namespace fabricbench
