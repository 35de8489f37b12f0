// The JSON form of a run result, both directions side by side. Every
// section goes through its record's field list (beside the record; the
// status's in results/result.hpp, the topology's in records/topology_json);
// what is written here is the document's frame, which sections it holds,
// and the arrays that are streamed rather than held (write_json).

#include <ostream>
#include <vector>

#include "fabricbench/core/byte_strings.hpp"
#include "fabricbench/core/json_fields.hpp"
#include "fabricbench/core/json_layout.hpp"
#include "fabricbench/records/topology_json.hpp"
#include "fabricbench/results/result.hpp"
#include "fabricbench/results/result_json.hpp"

namespace fabricbench {
namespace {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;
using fields::read;
using fields::to_value;

// What the writer streams rather than holds (core/json_layout.hpp): the
// arrays that grow with the cluster. The document gets a placeholder for
// each that is not empty.
const ojson streamed_placeholder = ojson::array({nullptr});

bool streams_links(const PairsResult& p) { return has_links(p.nodes); }
bool streams_intra(const PairsResult& p) { return !p.intra.empty(); }
bool streams_rails(const PairsResult& p) { return !p.rails.empty(); }
bool streams_nodes(const ClusterTopology& t) { return !t.nodes.empty(); }

// The pairs object; streamed, its matrices are placeholders (a copy without
// them is written, so the links are never held as JSON).
ojson pairs_to_json(const PairsResult& p, bool streamed) {
  if (!streamed) return to_value(p);
  PairsResult frame = p;
  frame.nodes = PairMatrix(p.nodes.size);
  frame.intra.clear();
  frame.rails.clear();
  ojson j = to_value(frame);
  if (streams_links(p)) j["links"] = streamed_placeholder;
  if (streams_intra(p)) j["intra_node"] = streamed_placeholder;
  if (streams_rails(p)) j["rails"] = streamed_placeholder;
  return j;
}

// The document; with `streamed`, placeholders where write_json streams.
ojson document(const RunResult& result, bool streamed) {
  ojson doc;
  doc["schema"] = result_schema_id;
  doc["tool"] = to_value(result.tool);
  doc["run"] = to_value(result.run);
  doc["status"] = to_value(StatusOf<const RunResult>{result});
  doc["records"] = to_value(result.records);
  if (result.sweep_cost) doc["sweep_cost"] = to_value(*result.sweep_cost);
  if (result.topology)
    doc["topology"] = streamed && streams_nodes(*result.topology)
                          ? topology_to_json(*result.topology, streamed_placeholder)
                          : topology_to_json(*result.topology);
  if (result.scaling) doc["scaling"] = to_value(*result.scaling);
  if (result.gpu_ladder) doc["gpu_ladder"] = to_value(*result.gpu_ladder);
  if (result.p2p_sweep) doc["p2p_sweep"] = to_value(*result.p2p_sweep);
  if (result.pairs) doc["pairs"] = pairs_to_json(*result.pairs, streamed);
  if (result.pairs || result.health) doc["findings"] = to_value(result.findings);
  if (!result.unconfirmed.empty()) doc["unconfirmed"] = to_value(result.unconfirmed);
  if (result.health) doc["health"] = to_value(*result.health);
  if (result.stragglers) doc["stragglers"] = to_value(*result.stragglers);
  if (result.budget) doc["budget"] = to_value(*result.budget);
  if (result.model_parallel) doc["model_parallel"] = to_value(*result.model_parallel);
  if (result.islands) doc["islands"] = to_value(*result.islands);
  if (result.bisection) doc["bisection"] = to_value(*result.bisection);
  if (result.storage) doc["storage"] = to_value(*result.storage);
  if (result.nccl) doc["nccl"] = to_value(*result.nccl);
  if (!result.verdicts.empty()) doc["verdicts"] = to_value(result.verdicts);
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
  StatusOf<RunResult> status{r};
  fields::from_value(doc.at("status"), status, "status", fields::Mode::strict);
  r.records = read<std::vector<SweepRecord>>(doc.at("records"), "records");
  if (const auto c = doc.find("sweep_cost"); c != doc.end()) r.sweep_cost = read<SweepCost>(*c, "sweep_cost");
  if (const auto t = doc.find("topology"); t != doc.end()) r.topology = topology_from_json(*t);
  if (const auto s = doc.find("scaling"); s != doc.end()) r.scaling = read<ScaleResult>(*s, "scaling");
  if (const auto g = doc.find("gpu_ladder"); g != doc.end()) r.gpu_ladder = read<GpuLadderResult>(*g, "gpu_ladder");
  if (const auto p = doc.find("p2p_sweep"); p != doc.end()) r.p2p_sweep = read<P2PSweepResult>(*p, "p2p_sweep");
  if (const auto p = doc.find("pairs"); p != doc.end()) r.pairs = read<PairsResult>(*p, "pairs");
  if (const auto f = doc.find("findings"); f != doc.end()) r.findings = read<std::vector<Finding>>(*f, "findings");
  if (const auto f = doc.find("unconfirmed"); f != doc.end())
    r.unconfirmed = read<std::vector<Finding>>(*f, "unconfirmed");
  if (const auto h = doc.find("health"); h != doc.end()) r.health = read<HealthResult>(*h, "health");
  if (const auto s = doc.find("stragglers"); s != doc.end()) r.stragglers = read<StragglersResult>(*s, "stragglers");
  if (const auto b = doc.find("budget"); b != doc.end()) r.budget = read<BudgetRecord>(*b, "budget");
  if (const auto m = doc.find("model_parallel"); m != doc.end())
    r.model_parallel = read<ModelParallelResult>(*m, "model_parallel");
  if (const auto i = doc.find("islands"); i != doc.end()) r.islands = read<IslandsResult>(*i, "islands");
  if (const auto b = doc.find("bisection"); b != doc.end()) r.bisection = read<BisectionResult>(*b, "bisection");
  if (const auto s = doc.find("storage"); s != doc.end()) r.storage = read<StorageResult>(*s, "storage");
  if (const auto n = doc.find("nccl"); n != doc.end()) r.nccl = read<NcclUsage>(*n, "nccl");
  if (const auto v = doc.find("verdicts"); v != doc.end()) r.verdicts = read<std::vector<Verdict>>(*v, "verdicts");
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
    streamed.push_back({{"pairs", "links"}, [&result](const auto& put) {
                          for_each_link(result.pairs->nodes, [&put](const PairLink& link) { put(to_value(link)); });
                        }});
  if (result.pairs && streams_intra(*result.pairs))
    streamed.push_back({{"pairs", "intra_node"}, [&result](const auto& put) {
                          for (const IntraNodeLinks& node : intra_links_of(*result.pairs)) put(to_value(node));
                        }});
  // One rail's links at a time.
  if (result.pairs && streams_rails(*result.pairs))
    streamed.push_back({{"pairs", "rails"}, [&result](const auto& put) {
                          const std::vector<PairMatrix>& rails = result.pairs->rails;
                          for (std::size_t l = 0; l < rails.size(); ++l)
                            put(to_value(RailLinks{static_cast<int>(l), links_of(rails[l])}));
                        }});
  write_json_layout(document(result, true), out, streamed);
}

}  // namespace fabricbench
