// The JSON form of a run result, both directions side by side. The records
// go through their field lists (model/result_fields.hpp); what is written by
// hand here is only what has no record of its own: the document's frame, the
// status, the projection (its input and points share one object) and the
// pair matrices (a matrix is written as its list of measured links).

#include <functional>
#include <ostream>
#include <vector>

#include <fmt/format.h>

#include "fabricbench/core/byte_strings.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/core/json_layout.hpp"
#include "fabricbench/model/result_consistency.hpp"
#include "fabricbench/model/result_fields.hpp"
#include "fabricbench/model/result_json.hpp"
#include "fabricbench/records/topology_json.hpp"

namespace fabricbench {
namespace {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;
using fields::read;
using fields::to_value;

// ---- scaling: the projection's input and points in one object -------------

ojson scaling_to_json(const ScaleResult& s) {
  ojson j;
  j["bytes"] = s.bytes;
  j["ranks_per_node"] = s.ranks_per_node;
  j["nic_gbit_per_node"] = to_value(s.nic_gbit_per_node);
  j["levels"] = to_value(s.levels);
  if (s.projection_input) {
    ojson p = to_value(*s.projection_input);
    p["points"] = to_value(s.projection);
    j["projection"] = p;
  } else {
    j["projection"] = nullptr;
  }
  return j;
}

ScaleResult scaling_from_json(const json& j) {
  ScaleResult s;
  s.bytes = read<std::size_t>(j.at("bytes"), "scaling/bytes");
  s.ranks_per_node = read<int>(j.at("ranks_per_node"), "scaling/ranks_per_node");
  s.nic_gbit_per_node = read<std::optional<double>>(j.at("nic_gbit_per_node"), "scaling/nic_gbit_per_node");
  s.levels = read<std::vector<LevelResult>>(j.at("levels"), "scaling/levels");
  if (const auto p = j.find("projection"); p != j.end() && !p->is_null()) {
    s.projection_input = read<ProjectionInput>(*p, "scaling/projection");
    s.projection = read<std::vector<ProjectionPoint>>(p->at("points"), "scaling/projection/points");
  }
  return s;
}

// ---- pairs: a matrix as the list of its measured links --------------------

// Whether the link from -> to is listed: measured in either figure.
bool listed(const PairMatrix& m, int from, int to) { return from != to && (m.bw(from, to) || m.lat(from, to)); }

// Each listed link of `m` as its JSON object, in order.
void for_each_link(const PairMatrix& m, const std::function<void(const ojson&)>& put) {
  for (int from = 0; from < m.size; ++from) {
    for (int to = 0; to < m.size; ++to) {
      if (!listed(m, from, to)) continue;
      ojson link;
      link["from"] = from;
      link["to"] = to;
      link["bandwidth_gbs"] = to_value(m.bw(from, to));
      link["latency_us"] = to_value(m.lat(from, to));
      put(link);
    }
  }
}

bool has_links(const PairMatrix& m) {
  bool any = false;
  for (int from = 0; from < m.size && !any; ++from)
    for (int to = 0; to < m.size && !any; ++to) any = listed(m, from, to);
  return any;
}

ojson matrix_to_json(const PairMatrix& m) {
  ojson links = ojson::array();
  for_each_link(m, [&links](const ojson& link) { links.push_back(link); });
  return links;
}

// One node's links within it, as `pairs.intra_node` lists them.
ojson intra_node_to_json(const PairsResult& p, std::size_t n) {
  ojson node;
  node["node"] = n;
  node["host"] = n < p.hosts.size() ? p.hosts[n] : std::string();
  node["links"] = matrix_to_json(p.intra[n]);
  return node;
}

// What the writer streams rather than holds (core/json_layout.hpp): the
// arrays that grow with the cluster. The document gets a placeholder for
// each that is not empty.
const ojson streamed_placeholder = ojson::array({nullptr});

bool streams_links(const PairsResult& p) { return has_links(p.nodes); }
bool streams_intra(const PairsResult& p) { return !p.intra.empty(); }
bool streams_nodes(const ClusterTopology& t) { return !t.nodes.empty(); }

PairMatrix matrix_from_json(const json& links, int size, const std::string& path) {
  PairMatrix m(size);
  for (std::size_t i = 0; i < links.size(); ++i) {
    const json& link = links[i];
    const std::string where = fmt::format("{}/{}", path, i);
    const int from = read<int>(link.at("from"), where + "/from");
    const int to = read<int>(link.at("to"), where + "/to");
    if (from < 0 || to < 0 || from >= size || to >= size)
      throw UsageError(fmt::format("{}: a link {} -> {} names a node beyond the {} listed", where, from, to, size));
    m.bw(from, to) = read<std::optional<double>>(link.at("bandwidth_gbs"), where + "/bandwidth_gbs");
    m.lat(from, to) = read<std::optional<double>>(link.at("latency_us"), where + "/latency_us");
  }
  return m;
}

ojson pairs_to_json(const PairsResult& p, bool streamed) {
  ojson j;
  j["bytes"] = p.bytes;
  j["small_bytes"] = p.small_bytes;
  j["rounds"] = p.rounds;
  j["mode"] = p.mode;
  if (p.mode == "random") j["seed"] = p.seed;
  j["rounds_planned"] = p.rounds_planned;
  j["ranks_per_node"] = p.ranks_per_node;
  j["hosts"] = p.hosts;
  j["links"] = streamed && streams_links(p) ? streamed_placeholder : matrix_to_json(p.nodes);
  if (streamed && streams_intra(p)) {
    j["intra_node"] = streamed_placeholder;
  } else {
    ojson intra = ojson::array();
    for (std::size_t n = 0; n < p.intra.size(); ++n) intra.push_back(intra_node_to_json(p, n));
    j["intra_node"] = intra;
  }
  j["wrong"] = p.wrong;
  return j;
}

PairsResult pairs_from_json(const json& j) {
  PairsResult p;
  p.bytes = read<std::size_t>(j.at("bytes"), "pairs/bytes");
  p.small_bytes = read<std::size_t>(j.at("small_bytes"), "pairs/small_bytes");
  p.rounds = read<std::vector<int>>(j.at("rounds"), "pairs/rounds");
  if (const auto m = j.find("mode"); m != j.end()) p.mode = read<std::string>(*m, "pairs/mode");
  if (const auto s = j.find("seed"); s != j.end()) p.seed = read<unsigned>(*s, "pairs/seed");
  const auto planned = j.find("rounds_planned");
  p.rounds_planned =
      planned != j.end() ? read<int>(*planned, "pairs/rounds_planned") : static_cast<int>(p.rounds.size());
  p.ranks_per_node = read<int>(j.at("ranks_per_node"), "pairs/ranks_per_node");
  p.hosts = read<std::vector<std::string>>(j.at("hosts"), "pairs/hosts");
  check_matrix_sizes(p.hosts.size(), j.at("intra_node").size(), p.ranks_per_node);
  p.nodes = matrix_from_json(j.at("links"), static_cast<int>(p.hosts.size()), "pairs/links");
  const json& intra = j.at("intra_node");
  for (std::size_t n = 0; n < intra.size(); ++n)
    p.intra.push_back(
        matrix_from_json(intra[n].at("links"), p.ranks_per_node, fmt::format("pairs/intra_node/{}/links", n)));
  p.wrong = read<std::uint64_t>(j.at("wrong"), "pairs/wrong");
  return p;
}

// The document; with `streamed`, placeholders where write_json streams.
ojson document(const RunResult& result, bool streamed) {
  ojson doc;
  doc["schema"] = result_schema_id;
  doc["tool"] = to_value(result.tool);
  doc["run"] = to_value(result.run);
  ojson status;
  status["complete"] = result.complete;
  status["checked"] = result.checked;
  status["wrong_elements"] = result.wrong_total;
  // Unchecked data is neither right nor wrong.
  status["data_ok"] = result.checked ? ojson(data_ok(result)) : ojson(nullptr);
  if (result.duration_s) status["duration_s"] = *result.duration_s;
  if (!result.end_reason.empty()) status["reason"] = result.end_reason;
  doc["status"] = status;
  doc["records"] = to_value(result.records);
  if (result.sweep_cost) doc["sweep_cost"] = to_value(*result.sweep_cost);
  if (result.topology)
    doc["topology"] = streamed && streams_nodes(*result.topology)
                          ? topology_to_json(*result.topology, streamed_placeholder)
                          : topology_to_json(*result.topology);
  if (result.scaling) doc["scaling"] = scaling_to_json(*result.scaling);
  if (result.gpu_ladder) doc["gpu_ladder"] = to_value(*result.gpu_ladder);
  if (result.p2p_sweep) doc["p2p_sweep"] = to_value(*result.p2p_sweep);
  if (result.pairs) doc["pairs"] = pairs_to_json(*result.pairs, streamed);
  if (result.pairs || result.health) doc["findings"] = to_value(result.findings);
  if (result.health) doc["health"] = to_value(*result.health);
  if (result.budget) doc["budget"] = to_value(*result.budget);
  if (result.model_parallel) doc["model_parallel"] = to_value(*result.model_parallel);
  if (result.islands) doc["islands"] = to_value(*result.islands);
  if (result.bisection) doc["bisection"] = to_value(*result.bisection);
  if (result.storage) doc["storage"] = to_value(*result.storage);
  return doc;
}

}  // namespace

nlohmann::ordered_json to_json(const RunResult& result) {
  ojson doc = document(result, false);
  encode_byte_strings(doc);  // as write_json writes them
  return doc;
}

RunResult result_from_valid_json(const nlohmann::json& doc) {
  RunResult r;
  r.tool = read<ToolInfo>(doc.at("tool"), "tool");
  r.run = read<RunInfo>(doc.at("run"), "run");
  const json& status = doc.at("status");
  r.complete = read<bool>(status.at("complete"), "status/complete");
  r.checked = read<bool>(status.at("checked"), "status/checked");
  r.wrong_total = read<std::uint64_t>(status.at("wrong_elements"), "status/wrong_elements");
  if (const auto d = status.find("duration_s"); d != status.end())
    r.duration_s = read<std::optional<double>>(*d, "status/duration_s");
  if (const auto reason = status.find("reason"); reason != status.end())
    r.end_reason = read<std::string>(*reason, "status/reason");
  r.records = read<std::vector<SweepRecord>>(doc.at("records"), "records");
  if (const auto c = doc.find("sweep_cost"); c != doc.end()) r.sweep_cost = read<SweepCost>(*c, "sweep_cost");
  if (const auto t = doc.find("topology"); t != doc.end()) r.topology = topology_from_json(*t);
  if (const auto s = doc.find("scaling"); s != doc.end()) r.scaling = scaling_from_json(*s);
  if (const auto g = doc.find("gpu_ladder"); g != doc.end()) r.gpu_ladder = read<GpuLadderResult>(*g, "gpu_ladder");
  if (const auto p = doc.find("p2p_sweep"); p != doc.end()) r.p2p_sweep = read<P2PSweepResult>(*p, "p2p_sweep");
  if (const auto p = doc.find("pairs"); p != doc.end()) r.pairs = pairs_from_json(*p);
  if (const auto f = doc.find("findings"); f != doc.end()) r.findings = read<std::vector<Finding>>(*f, "findings");
  if (const auto h = doc.find("health"); h != doc.end()) r.health = read<HealthResult>(*h, "health");
  if (const auto b = doc.find("budget"); b != doc.end()) r.budget = read<BudgetRecord>(*b, "budget");
  if (const auto m = doc.find("model_parallel"); m != doc.end())
    r.model_parallel = read<ModelParallelResult>(*m, "model_parallel");
  if (const auto i = doc.find("islands"); i != doc.end()) r.islands = read<IslandsResult>(*i, "islands");
  if (const auto b = doc.find("bisection"); b != doc.end()) r.bisection = read<BisectionResult>(*b, "bisection");
  if (const auto s = doc.find("storage"); s != doc.end()) r.storage = read<StorageResult>(*s, "storage");
  return r;
}

// The arrays that grow with the cluster are made one element at a time as
// they are written: at 512 nodes the document is otherwise millions of nodes
// (261,632 pair links, 512 node records of 8 GPUs x 18 NVLinks).
void write_json(const RunResult& result, std::ostream& out) {
  std::vector<StreamedArray> streamed;
  if (result.topology && streams_nodes(*result.topology))
    streamed.push_back({{"topology", "nodes"}, [&result](const auto& put) {
                          for (const NodeTopology& node : result.topology->nodes) put(node_to_json(node));
                        }});
  if (result.pairs && streams_links(*result.pairs))
    streamed.push_back({{"pairs", "links"}, [&result](const auto& put) { for_each_link(result.pairs->nodes, put); }});
  if (result.pairs && streams_intra(*result.pairs))
    streamed.push_back({{"pairs", "intra_node"}, [&result](const auto& put) {
                          for (std::size_t n = 0; n < result.pairs->intra.size(); ++n)
                            put(intra_node_to_json(*result.pairs, n));
                        }});
  write_json_layout(document(result, true), out, streamed);
}

}  // namespace fabricbench
