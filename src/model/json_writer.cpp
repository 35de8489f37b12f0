#include <ostream>

#include "fabricbench/model/result_json.hpp"

#include "fabricbench/topology/topology_writers.hpp"

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

json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json scaling_json(const ScaleResult& s) {
  json j;
  j["bytes"] = s.bytes;
  j["ranks_per_node"] = s.ranks_per_node;
  j["nic_gbit_per_node"] = optional_number(s.nic_gbit_per_node);
  json levels = json::array();
  for (const LevelResult& l : s.levels) {
    json level;
    level["kind"] = name(l.kind);
    level["op"] = name(l.op);
    level["bytes"] = l.bytes;
    level["nodes_per_group"] = l.nodes_per_group;
    level["ranks_per_group"] = l.ranks_per_group;
    json groups = json::array();
    for (const GroupResult& g : l.groups) {
      json group;
      group["group"] = g.group;
      group["nodes"] = g.nodes;
      group["hosts"] = g.hosts;
      group["ranks"] = g.ranks;
      group["time_us"] = g.time_us;
      group["busbw_gbs"] = g.busbw_gbs;
      group["wrong"] = g.wrong;
      groups.push_back(group);
    }
    level["groups"] = groups;
    level["busbw_min_gbs"] = l.busbw_min_gbs;
    level["busbw_median_gbs"] = l.busbw_median_gbs;
    level["efficiency"] = optional_number(l.efficiency);
    level["ceiling_gbs"] = optional_number(l.ceiling_gbs);
    level["ceiling_fraction"] = optional_number(l.ceiling_fraction);
    level["warning"] = l.warning.empty() ? json(nullptr) : json(l.warning);
    levels.push_back(level);
  }
  j["levels"] = levels;
  if (s.projection_input) {
    json p;
    p["grad_bytes"] = s.projection_input->grad_bytes;
    p["compute_ms"] = s.projection_input->compute_ms;
    p["overlap"] = s.projection_input->overlap;
    p["sharded"] = s.projection_input->sharded;
    json points = json::array();
    for (const ProjectionPoint& pt : s.projection) {
      json point;
      point["nodes"] = pt.nodes;
      point["gpus"] = pt.gpus;
      point["comm_ms"] = pt.comm_ms;
      point["step_ms"] = pt.step_ms;
      point["speedup"] = pt.speedup;
      point["efficiency"] = pt.efficiency;
      points.push_back(point);
    }
    p["points"] = points;
    j["projection"] = p;
  } else {
    j["projection"] = nullptr;
  }
  return j;
}

json matrix_json(const PairMatrix& m) {
  json links = json::array();
  for (int from = 0; from < m.size; ++from) {
    for (int to = 0; to < m.size; ++to) {
      if (from == to || (!m.bw(from, to) && !m.lat(from, to))) continue;
      json link;
      link["from"] = from;
      link["to"] = to;
      link["bandwidth_gbs"] = optional_number(m.bw(from, to));
      link["latency_us"] = optional_number(m.lat(from, to));
      links.push_back(link);
    }
  }
  return links;
}

json pairs_json(const PairsResult& p) {
  json j;
  j["bytes"] = p.bytes;
  j["small_bytes"] = p.small_bytes;
  j["rounds"] = p.rounds;
  j["ranks_per_node"] = p.ranks_per_node;
  j["hosts"] = p.hosts;
  j["links"] = matrix_json(p.nodes);
  json intra = json::array();
  for (std::size_t n = 0; n < p.intra.size(); ++n) {
    json node;
    node["node"] = n;
    node["host"] = n < p.hosts.size() ? p.hosts[n] : std::string();
    node["links"] = matrix_json(p.intra[n]);
    intra.push_back(node);
  }
  j["intra_node"] = intra;
  j["wrong"] = p.wrong;
  return j;
}

json p2p_sweep_json(const P2PSweepResult& p) {
  json j;
  j["ranks"] = p.ranks;
  j["hosts"] = p.hosts;
  j["window"] = p.window;
  json records = json::array();
  for (const P2PRecord& r : p.records) {
    json record;
    record["test"] = name(r.test);
    record["bytes"] = r.bytes;
    record["window"] = r.window;
    record["time_us"] = r.time_us;
    record["latency_us"] = r.latency_us;
    record["bandwidth_gbs"] = r.bandwidth_gbs;
    record["iterations"] = r.iterations;
    record["wrong"] = r.wrong ? json(*r.wrong) : json(nullptr);
    records.push_back(record);
  }
  j["records"] = records;
  j["wrong"] = p.wrong;
  return j;
}

json findings_json(const std::vector<Finding>& findings) {
  json out = json::array();
  for (const Finding& f : findings) {
    json j;
    j["kind"] = name(f.kind);
    j["nodes"] = f.nodes;
    j["hosts"] = f.hosts;
    j["value_gbs"] = f.value_gbs;
    j["reference_gbs"] = f.reference_gbs;
    j["message"] = f.message;
    out.push_back(j);
  }
  return out;
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
  if (!info.devices.empty()) run["devices"] = info.devices;
  if (info.cost) {
    json cost;
    if (info.cost->per_gpu_hour) cost["price_per_gpu_hour"] = *info.cost->per_gpu_hour;
    if (info.cost->per_node_hour) cost["price_per_node_hour"] = *info.cost->per_node_hour;
    run["cost"] = cost;
  }
  if (info.rank_time) run["rank_time"] = choice_name(*info.rank_time);
  doc["run"] = run;

  json status;
  status["complete"] = result.complete;
  status["checked"] = result.checked;
  status["wrong_elements"] = result.wrong_total;
  // Unchecked data is neither right nor wrong.
  status["data_ok"] = result.checked ? json(data_ok(result)) : json(nullptr);
  if (result.duration_s) status["duration_s"] = *result.duration_s;
  if (!result.end_reason.empty()) status["reason"] = result.end_reason;
  doc["status"] = status;

  json records = json::array();
  for (const SweepRecord& r : result.records) records.push_back(record_json(r));
  doc["records"] = records;
  if (result.topology) doc["topology"] = topology_to_json(*result.topology);
  if (result.scaling) doc["scaling"] = scaling_json(*result.scaling);
  if (result.p2p_sweep) doc["p2p_sweep"] = p2p_sweep_json(*result.p2p_sweep);
  if (result.pairs) {
    doc["pairs"] = pairs_json(*result.pairs);
    doc["findings"] = findings_json(result.findings);
  }
  return doc;
}

void write_json(const RunResult& result, std::ostream& out) { out << to_json(result).dump(2) << '\n'; }

}  // namespace fabricbench
