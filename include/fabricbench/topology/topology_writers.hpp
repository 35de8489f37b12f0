#pragma once
// The JSON "topology" section and its reading back, which gathering uses.
// The human summary is output/topology_summary.hpp.

#include <nlohmann/json.hpp>

#include "fabricbench/topology/topology.hpp"

namespace fabricbench {

nlohmann::ordered_json node_to_json(const NodeTopology& node);
// The inverse of node_to_json; missing or mistyped members stay unknown.
NodeTopology node_from_json(const nlohmann::json& j);
nlohmann::ordered_json topology_to_json(const ClusterTopology& cluster);

}  // namespace fabricbench
