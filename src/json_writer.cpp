#include <ostream>

#include "fabricbench/writers.hpp"

namespace fabricbench {
namespace {

using json = nlohmann::ordered_json;

json record_json(const SweepRecord& r) {
  json j;
  j["op"] = name(r.op);
  j["dtype"] = name(r.dtype);
  j["redop"] = r.redop ? json(name(*r.redop)) : json(nullptr);
  j["root"] = r.root ? json(*r.root) : json(nullptr);
  j["placement"] = name(r.placement);
  j["bytes"] = r.bytes;
  j["count"] = r.count;
  j["ranks"] = r.ranks;
  if (r.timing) {
    const Timing& t = *r.timing;
    j["time_us"] = t.time_us;
    j["time_min_us"] = t.time_min_us;
    j["time_max_us"] = t.time_max_us;
    j["p50_us"] = t.p50_us;
    j["p99_us"] = t.p99_us;
    j["cv"] = t.cv;
    j["algbw_gbs"] = t.algbw_gbs;
    j["busbw_gbs"] = t.busbw_gbs;
    j["iterations"] = t.iterations;
    j["wrong"] = t.wrong ? json(*t.wrong) : json(nullptr);
  } else {
    j["skipped"] = r.skipped;
  }
  return j;
}

}  // namespace

nlohmann::ordered_json to_json(const RunResult& result) {
  json doc;
  doc["schema"] = result_schema_id;

  json tool;
  tool["name"] = "fabricbench";
  tool["version"] = result.tool.version;
  tool["git"] = result.tool.git;
  tool["transports"] = result.tool.transports;
  tool["libraries"] = json::object();
  for (const auto& [k, v] : result.tool.libraries) tool["libraries"][k] = v;
  doc["tool"] = tool;

  const RunInfo& info = result.run;
  json run;
  run["start_utc"] = info.start_utc;
  run["command_line"] = info.command_line;
  run["ranks"] = info.ranks;
  run["nodes"] = info.nodes;
  run["ranks_per_node"] = info.ranks_per_node;
  run["hostnames"] = info.hostnames;
  run["transport"] = info.transport;
  run["environment"] = json::object();
  for (const auto& [k, v] : info.environment) run["environment"][k] = v;
  doc["run"] = run;

  json status;
  status["complete"] = result.complete;
  status["checked"] = result.checked;
  status["wrong_elements"] = result.wrong_total;
  status["data_ok"] = data_ok(result);
  doc["status"] = status;

  json records = json::array();
  for (const SweepRecord& r : result.records) records.push_back(record_json(r));
  doc["records"] = records;
  return doc;
}

void write_json(const RunResult& result, std::ostream& out) { out << to_json(result).dump(2) << '\n'; }

}  // namespace fabricbench
