#include "fabricbench/model/reader.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "fabricbench/core/bounded_json.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/model/result_consistency.hpp"
#include "fabricbench/model/result_json.hpp"
#include "fabricbench/model/schema_validate.hpp"
#include "fabricbench/topology/topology_writers.hpp"

namespace fabricbench {
namespace {

using json = nlohmann::json;

template <typename T>
std::optional<T> opt(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

// Integers are range-checked in the type they are read into: a schema-valid
// 2^63-1 must not wrap to -1 on its way to an index.
template <typename T>
T int_at(const json& j, const char* key) {
  return checked_integer<T>(j.at(key), key);
}

template <typename T>
std::optional<T> opt_int(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return checked_integer<T>(*it, key);
}

std::vector<int> ints_at(const json& j, const char* key) {
  std::vector<int> out;
  const json& list = j.at(key);
  out.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i)
    out.push_back(checked_integer<int>(list[i], fmt::format("{}/{}", key, i)));
  return out;
}

// Runs `read` and prefixes the path of the part it reads to a UsageError.
template <typename Read>
auto within(const std::string& where, Read read) {
  try {
    return read();
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}/{}", where, e.what()));
  }
}

template <typename T>
T value_or(const json& j, const char* key, T fallback) {
  return opt<T>(j, key).value_or(fallback);
}

// Names were validated against the schema's enums, so a miss here is a
// schema and code that disagree: say so rather than guess.
template <typename T, typename Parse>
T parsed(const json& j, const char* key, Parse parse) {
  const auto value = parse(j.at(key).get<std::string>());
  if (!value) throw Error(fmt::format("{} '{}' is in the schema but unknown to this build", key, j.at(key).dump()));
  return *value;
}

std::optional<LevelKind> parse_level_kind(std::string_view text) {
  if (text == name(LevelKind::nodes)) return LevelKind::nodes;
  if (text == name(LevelKind::rail)) return LevelKind::rail;
  return std::nullopt;
}

std::optional<FindingKind> parse_finding_kind(std::string_view text) {
  if (text == name(FindingKind::slow_node)) return FindingKind::slow_node;
  if (text == name(FindingKind::slow_link)) return FindingKind::slow_link;
  return std::nullopt;
}

std::optional<Placement> parse_placement(std::string_view text) {
  if (text == name(Placement::in_place)) return Placement::in_place;
  if (text == name(Placement::out_of_place)) return Placement::out_of_place;
  return std::nullopt;
}

SweepRecord record_from(const json& j) {
  SweepRecord r;
  r.op = parsed<Op>(j, "op", parse_op);
  r.dtype = parsed<DType>(j, "dtype", parse_dtype);
  if (!j.at("redop").is_null()) r.redop = parsed<RedOp>(j, "redop", parse_redop);
  r.root = opt_int<int>(j, "root");
  r.placement = parsed<Placement>(j, "placement", parse_placement);
  r.bytes = int_at<std::size_t>(j, "bytes");
  r.count = int_at<std::size_t>(j, "count");
  r.ranks = int_at<int>(j, "ranks");
  if (j.contains("skipped")) {
    r.skipped = j.at("skipped").get<std::string>();
    return r;
  }
  Timing t;
  t.time_us = j.at("time_us").get<double>();
  t.time_min_us = j.at("time_min_us").get<double>();
  t.time_max_us = j.at("time_max_us").get<double>();
  t.p50_us = j.at("p50_us").get<double>();
  t.p99_us = j.at("p99_us").get<double>();
  t.cv = j.at("cv").get<double>();
  t.algbw_gbs = j.at("algbw_gbs").get<double>();
  t.busbw_gbs = j.at("busbw_gbs").get<double>();
  t.iterations = int_at<int>(j, "iterations");
  t.wrong = opt_int<std::uint64_t>(j, "wrong");
  r.timing = t;
  return r;
}

ScaleResult scaling_from(const json& j) {
  ScaleResult s;
  s.bytes = int_at<std::size_t>(j, "bytes");
  s.ranks_per_node = int_at<int>(j, "ranks_per_node");
  s.nic_gbit_per_node = opt<double>(j, "nic_gbit_per_node");
  for (const json& lj : j.at("levels")) {
    LevelResult l;
    l.kind = parsed<LevelKind>(lj, "kind", parse_level_kind);
    l.op = parsed<Op>(lj, "op", parse_op);
    l.bytes = int_at<std::size_t>(lj, "bytes");
    l.nodes_per_group = int_at<int>(lj, "nodes_per_group");
    l.ranks_per_group = int_at<int>(lj, "ranks_per_group");
    for (const json& gj : lj.at("groups")) {
      GroupResult g;
      g.group = int_at<int>(gj, "group");
      g.nodes = ints_at(gj, "nodes");
      g.hosts = gj.at("hosts").get<std::vector<std::string>>();
      g.ranks = int_at<int>(gj, "ranks");
      g.time_us = gj.at("time_us").get<double>();
      g.busbw_gbs = gj.at("busbw_gbs").get<double>();
      g.wrong = int_at<std::uint64_t>(gj, "wrong");
      l.groups.push_back(std::move(g));
    }
    l.busbw_min_gbs = lj.at("busbw_min_gbs").get<double>();
    l.busbw_median_gbs = lj.at("busbw_median_gbs").get<double>();
    l.efficiency = opt<double>(lj, "efficiency");
    l.ceiling_gbs = opt<double>(lj, "ceiling_gbs");
    l.ceiling_fraction = opt<double>(lj, "ceiling_fraction");
    l.warning = value_or<std::string>(lj, "warning", "");
    s.levels.push_back(std::move(l));
  }
  if (const auto p = j.find("projection"); p != j.end() && !p->is_null()) {
    ProjectionInput in;
    in.grad_bytes = int_at<std::size_t>(*p, "grad_bytes");
    in.compute_ms = p->at("compute_ms").get<double>();
    in.overlap = p->at("overlap").get<double>();
    in.sharded = p->at("sharded").get<bool>();
    s.projection_input = in;
    for (const json& pj : p->at("points")) {
      ProjectionPoint pt;
      pt.nodes = int_at<int>(pj, "nodes");
      pt.gpus = int_at<int>(pj, "gpus");
      pt.comm_ms = pj.at("comm_ms").get<double>();
      pt.step_ms = pj.at("step_ms").get<double>();
      pt.speedup = pj.at("speedup").get<double>();
      pt.efficiency = pj.at("efficiency").get<double>();
      s.projection.push_back(pt);
    }
  }
  return s;
}

PairMatrix matrix_from(const json& links, int size) {
  PairMatrix m(size);
  for (std::size_t i = 0; i < links.size(); ++i) {
    const json& link = links[i];
    const int from = within(fmt::format("links/{}", i), [&] { return int_at<int>(link, "from"); });
    const int to = within(fmt::format("links/{}", i), [&] { return int_at<int>(link, "to"); });
    if (from < 0 || to < 0 || from >= size || to >= size)
      throw UsageError(fmt::format("links/{}: a link {} -> {} names a node beyond the {} listed", i, from, to, size));
    m.bw(from, to) = opt<double>(link, "bandwidth_gbs");
    m.lat(from, to) = opt<double>(link, "latency_us");
  }
  return m;
}

PairsResult pairs_from(const json& j) {
  PairsResult p;
  p.bytes = int_at<std::size_t>(j, "bytes");
  p.small_bytes = int_at<std::size_t>(j, "small_bytes");
  p.rounds = ints_at(j, "rounds");
  p.ranks_per_node = int_at<int>(j, "ranks_per_node");
  p.hosts = j.at("hosts").get<std::vector<std::string>>();
  check_matrix_sizes(p.hosts.size(), j.at("intra_node").size(), p.ranks_per_node);
  p.nodes = within("pairs", [&] { return matrix_from(j.at("links"), static_cast<int>(p.hosts.size())); });
  const json& intra = j.at("intra_node");
  for (std::size_t n = 0; n < intra.size(); ++n)
    p.intra.push_back(within(fmt::format("pairs/intra_node/{}", n),
                             [&] { return matrix_from(intra[n].at("links"), p.ranks_per_node); }));
  p.wrong = int_at<std::uint64_t>(j, "wrong");
  return p;
}

P2PSweepResult p2p_sweep_from(const json& j) {
  P2PSweepResult p;
  p.ranks = j.at("ranks").get<std::vector<int>>();
  p.hosts = j.at("hosts").get<std::vector<std::string>>();
  p.window = j.at("window").get<int>();
  for (const json& rj : j.at("records")) {
    P2PRecord r;
    r.test = parsed<P2PTest>(rj, "test", parse_p2p_test);
    r.bytes = rj.at("bytes").get<std::size_t>();
    r.window = rj.at("window").get<int>();
    r.time_us = rj.at("time_us").get<double>();
    r.latency_us = rj.at("latency_us").get<double>();
    r.bandwidth_gbs = rj.at("bandwidth_gbs").get<double>();
    r.iterations = rj.at("iterations").get<int>();
    r.wrong = opt<std::uint64_t>(rj, "wrong");
    p.records.push_back(r);
  }
  p.wrong = j.at("wrong").get<std::uint64_t>();
  return p;
}

ClusterTopology topology_from(const json& j) {
  ClusterTopology t;
  for (const json& n : j.at("nodes")) t.nodes.push_back(node_from_json(n));
  for (const json& g : j.at("groups"))
    t.groups.push_back({g.at("signature").get<std::string>(), g.at("hosts").get<std::vector<std::string>>()});
  for (const json& a : j.at("anomalies"))
    t.anomalies.push_back({a.at("kind").get<std::string>(), a.at("host").get<std::string>(),
                           a.at("device").get<std::string>(), a.at("detail").get<std::string>()});
  t.notes = j.at("notes").get<std::vector<std::string>>();
  return t;
}

RunResult convert(const json& doc) {
  RunResult r;
  const json& tool = doc.at("tool");
  r.tool.version = tool.at("version").get<std::string>();
  r.tool.git = tool.at("git").get<std::string>();
  r.tool.transports = tool.at("transports").get<std::vector<std::string>>();
  r.tool.libraries = tool.at("libraries").get<std::map<std::string, std::string>>();
  const json& run = doc.at("run");
  RunInfo& info = r.run;
  info.start_utc = run.at("start_utc").get<std::string>();
  info.command_line = run.at("command_line").get<std::vector<std::string>>();
  within("run", [&] {
    info.ranks = int_at<int>(run, "ranks");
    info.nodes = int_at<int>(run, "nodes");
    info.ranks_per_node = ints_at(run, "ranks_per_node");
  });
  info.hostnames = run.at("hostnames").get<std::vector<std::string>>();
  info.transport = run.at("transport").get<std::string>();
  info.environment = run.at("environment").get<std::map<std::string, std::string>>();
  if (run.contains("devices")) info.devices = run.at("devices").get<std::vector<std::string>>();
  if (const auto c = run.find("cost"); c != run.end())
    info.cost = PriceInfo{opt<double>(*c, "price_per_gpu_hour"), opt<double>(*c, "price_per_node_hour")};
  if (run.contains("rank_time"))
    info.rank_time = parsed<RankTime>(run, "rank_time", [](const std::string& t) { return parse_choice<RankTime>(t); });
  const json& status = doc.at("status");
  r.complete = status.at("complete").get<bool>();
  r.checked = status.at("checked").get<bool>();
  r.wrong_total = within("status", [&] { return int_at<std::uint64_t>(status, "wrong_elements"); });
  r.duration_s = opt<double>(status, "duration_s");
  r.end_reason = value_or<std::string>(status, "reason", "");
  const json& records = doc.at("records");
  for (std::size_t i = 0; i < records.size(); ++i)
    r.records.push_back(within(fmt::format("records/{}", i), [&] { return record_from(records[i]); }));
  if (const auto s = doc.find("scaling"); s != doc.end())
    r.scaling = within("scaling", [&] { return scaling_from(*s); });
  if (const auto p = doc.find("pairs"); p != doc.end()) r.pairs = pairs_from(*p);
  if (const auto p = doc.find("p2p_sweep"); p != doc.end()) r.p2p_sweep = p2p_sweep_from(*p);
  if (const auto f = doc.find("findings"); f != doc.end()) {
    for (const json& fj : *f) {
      Finding finding;
      finding.kind = parsed<FindingKind>(fj, "kind", parse_finding_kind);
      finding.nodes = within("findings", [&] { return ints_at(fj, "nodes"); });
      finding.hosts = fj.at("hosts").get<std::vector<std::string>>();
      finding.value_gbs = fj.at("value_gbs").get<double>();
      finding.reference_gbs = fj.at("reference_gbs").get<double>();
      finding.message = fj.at("message").get<std::string>();
      r.findings.push_back(std::move(finding));
    }
  }
  if (const auto t = doc.find("topology"); t != doc.end()) r.topology = topology_from(*t);
  return r;
}

}  // namespace

RunResult result_from_json(const nlohmann::json& document, const std::string& label) {
  if (!document.is_object())
    throw UsageError(
        fmt::format("{}: not a fabricbench result (a JSON {}, not an object)", label, document.type_name()));
  const auto schema = document.find("schema");
  if (schema == document.end() || !schema->is_string())
    throw UsageError(
        fmt::format("{}: not a fabricbench result (no \"schema\" member; expected {})", label, result_schema_id));
  if (schema->get<std::string>() != result_schema_id)
    throw UsageError(fmt::format("{}: not a fabricbench result (schema '{}', expected {})", label,
                                 schema->get<std::string>(), result_schema_id));
  const SchemaValidator validator(json::parse(result_schema_text()));
  const std::vector<SchemaError> errors = validator.validate(document, 1);
  if (!errors.empty()) {
    const SchemaError& e = errors.front();
    throw UsageError(fmt::format("{}: {}{}", label, e.path.empty() ? "" : e.path + ": ", e.message));
  }
  try {
    RunResult result = convert(document);
    check_consistency(result);
    return result;
  } catch (const json::exception& e) {
    throw UsageError(fmt::format("{}: does not read as a result: {}", label, e.what()));
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", label, e.what()));
  }
}

RunResult read_result_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return result_from_json(parse_bounded_json(text.str(), path), path);
}

}  // namespace fabricbench
