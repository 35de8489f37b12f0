#pragma once
// The JSON "topology" section and its reading back, which gathering uses:
// here with the records, below the probes and model, because the probe's
// gather sends each node's record as this JSON. One field list per record
// (in topology_json.cpp, walked by core/json_fields.hpp) drives both
// directions.
// The human summary is output/topology_summary.hpp.

#include <nlohmann/json.hpp>

#include "fabricbench/records/topology.hpp"

namespace fabricbench {

nlohmann::ordered_json node_to_json(const NodeTopology& node);
// The inverse of node_to_json; missing or mistyped members stay unknown.
NodeTopology node_from_json(const nlohmann::json& j);
nlohmann::ordered_json topology_to_json(const ClusterTopology& cluster);
// The same with `nodes_placeholder` where the node records go, for a writer
// that streams them one node_to_json at a time (core/json_layout.hpp).
nlohmann::ordered_json topology_to_json(const ClusterTopology& cluster,
                                        const nlohmann::ordered_json& nodes_placeholder);
// The inverse of topology_to_json, as lenient as node_from_json.
ClusterTopology topology_from_json(const nlohmann::json& j);
// One rank's configuration record (node_config.hpp), both ways; reading
// throws UsageError for a record that is not an object.
nlohmann::ordered_json config_to_json(const NodeConfig& config);
NodeConfig config_from_json(const nlohmann::json& j);

}  // namespace fabricbench
