#pragma once
// Topology writers: the JSON "topology" section (and its reading back, which
// gathering uses) and the one-screen human summary. They only format.

#include <iosfwd>

#include <nlohmann/json.hpp>

#include "fabricbench/topology/topology.hpp"

namespace fabricbench {

nlohmann::ordered_json node_to_json(const NodeTopology& node);
// The inverse of node_to_json; missing or mistyped members stay unknown.
NodeTopology node_from_json(const nlohmann::json& j);
nlohmann::ordered_json topology_to_json(const ClusterTopology& cluster);

// The human summary: cluster header, each configuration with the facts of
// its first node, then the anomalies.
void write_topology_summary(const ClusterTopology& cluster, std::ostream& out);

}  // namespace fabricbench
