#include "fabricbench/results/result_csv.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fabricbench/core/json_fields.hpp"
#include "fabricbench/records/scaling.hpp"
#include "fabricbench/results/result.hpp"

namespace fabricbench {
namespace {

// The run's identity, ahead of every record's own columns.
template <class Field>
void identity_fields(const RunInfo& run, Field&& field) {
  field("start_utc", CsvCell{run.start_utc, true});
  field("label", CsvCell{run.label, true});
  field("hostnames", CsvCell{fmt::format("{}", fmt::join(run.hostnames, " ")), true});
}

template <class T>
CsvCell cell_of(const T& value) {
  if constexpr (fields::is_optional<T>::value) {
    return value ? cell_of(*value) : CsvCell{};
  } else if constexpr (fields::Named<T>) {
    return {std::string(name(value)), false};
  } else if constexpr (std::is_same_v<T, std::string>) {
    return {value, true};
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    return {fmt::format("{}", fmt::join(value, " ")), true};
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    return {fmt::format("{}", fmt::join(value, " ")), false};
  } else {
    static_assert(std::is_arithmetic_v<T>, "a record member with no flat form");
    return {fmt::format("{}", value), false};
  }
}

struct Flattener {
  std::vector<std::string>* names;
  std::vector<CsvCell>* cells;

  void add(const char* key, CsvCell cell) const {
    if (names) names->emplace_back(key);
    if (cells) cells->push_back(std::move(cell));
  }
  void operator()(const char* key, CsvCell cell) const { add(key, std::move(cell)); }
  template <class T>
  void operator()(const char* key, const T& value) const {
    add(key, cell_of(value));
  }
  template <class T>
  void operator()(const char* key, fields::Omitted<T> v) const {
    add(key, cell_of(v.value));
  }
  template <class T>
  void operator()(const char* key, fields::EmptyAsNull<T> v) const {
    add(key, cell_of(v.value));
  }
  template <class T>
  void operator()(fields::Inlined<T> v) const {
    if (v.value) {
      fields_of(*v.value, *this);
    } else {
      const typename std::remove_const_t<T>::value_type none{};
      const Flattener blank{names, nullptr};
      fields_of(none, blank);
      if (cells) cells->resize(cells->size() + fields::keys_of<typename std::remove_const_t<T>::value_type>().size());
    }
  }
};

// Rows of one section: the first row names the columns, every later row
// must give the same ones in the same order (a blank where one does not apply).
class TableBuilder {
 public:
  TableBuilder(std::string section, const RunInfo& run) : run_(run) { table_.section = std::move(section); }

  void begin_row() {
    row_.clear();
    const Flattener f{nullptr, &row_};
    identity_fields(run_, f);
    if (table_.rows.empty()) {
      const Flattener names{&table_.columns, nullptr};
      identity_fields(run_, names);
    }
  }
  template <class T>
  void add(const char* column, const T& value) {
    if (table_.rows.empty()) table_.columns.emplace_back(column);
    row_.push_back(cell_of(value));
  }
  void end_row() { table_.rows.push_back(std::move(row_)); }
  CsvTable take() { return std::move(table_); }

 private:
  const RunInfo& run_;
  CsvTable table_;
  std::vector<CsvCell> row_;
};

const std::optional<double> none;

CsvTable ladder_table(const RunResult& r) {
  TableBuilder t("ladder", r.run);
  for (const LevelResult& l : r.scaling->levels) {
    const std::size_t groups = std::max<std::size_t>(l.groups.size(), 1);
    for (std::size_t g = 0; g < groups; ++g) {
      const GroupResult* group = g < l.groups.size() ? &l.groups[g] : nullptr;
      t.begin_row();
      t.add("kind", l.kind);
      t.add("op", l.op);
      t.add("bytes", l.bytes);
      t.add("level", level_label(l));
      t.add("nodes_per_group", l.nodes_per_group);
      t.add("ranks_per_group", l.ranks_per_group);
      t.add("busbw_min_gbs", l.busbw_min_gbs);
      t.add("busbw_median_gbs", l.busbw_median_gbs);
      t.add("efficiency", l.efficiency);
      t.add("ceiling_gbs", l.ceiling_gbs);
      t.add("ceiling_fraction", l.ceiling_fraction);
      t.add("warning", l.warning);
      t.add("group", group ? std::optional<int>(group->group) : std::nullopt);
      t.add("group_hosts", group ? group->hosts : std::vector<std::string>{});
      t.add("group_ranks", group ? std::optional<int>(group->ranks) : std::nullopt);
      t.add("group_time_us", group ? std::optional<double>(group->time_us) : none);
      t.add("group_busbw_gbs", group ? std::optional<double>(group->busbw_gbs) : none);
      t.add("group_wrong", group ? std::optional<std::uint64_t>(group->wrong) : std::nullopt);
      t.end_row();
    }
  }
  return t.take();
}

CsvTable gpu_ladder_table(const RunResult& r) {
  TableBuilder t("gpu_ladder", r.run);
  for (const GpuLevelResult& l : r.gpu_ladder->levels) {
    const std::size_t sets = std::max<std::size_t>(l.sets.size(), 1);
    for (std::size_t i = 0; i < sets; ++i) {
      const GpuSetResult* set = i < l.sets.size() ? &l.sets[i] : nullptr;
      t.begin_row();
      t.add("gpus", l.gpus);
      t.add("choice", l.choice);
      t.add("op", l.op);
      t.add("bytes", l.bytes);
      t.add("path", l.path);
      t.add("busbw_min_gbs", l.busbw_min_gbs);
      t.add("busbw_median_gbs", l.busbw_median_gbs);
      t.add("efficiency", l.efficiency);
      t.add("set_node", set ? std::optional<int>(set->node) : std::nullopt);
      t.add("set_host", set ? set->host : std::string());
      t.add("set_gpus", set ? set->gpus : std::vector<int>{});
      t.add("set_path", set ? set->path : std::string());
      t.add("set_time_us", set ? std::optional<double>(set->time_us) : none);
      t.add("set_busbw_gbs", set ? std::optional<double>(set->busbw_gbs) : none);
      t.add("set_wrong", set ? std::optional<std::uint64_t>(set->wrong) : std::nullopt);
      t.end_row();
    }
  }
  return t.take();
}

void add_links(TableBuilder& t, const PairsResult& p, const PairMatrix& m, const char* scope, std::optional<int> node,
               std::optional<int> rail, const std::vector<std::string>& names) {
  const auto name_of = [&names](int i) {
    return static_cast<std::size_t>(i) < names.size() ? names[static_cast<std::size_t>(i)] : std::string();
  };
  for (int from = 0; from < m.size; ++from)
    for (int to = 0; to < m.size; ++to) {
      if (from == to || (!m.bw(from, to) && !m.lat(from, to))) continue;
      t.begin_row();
      t.add("scope", std::string(scope));
      t.add("node", node);
      t.add("host", node ? name_of(*node) : std::string());
      t.add("rail", rail);
      t.add("from", from);
      t.add("to", to);
      t.add("from_host", node ? std::string() : name_of(from));
      t.add("to_host", node ? std::string() : name_of(to));
      t.add("bytes", m.smaller(from, to).value_or(p.bytes));  // the bandwidth's message
      t.add("bandwidth_gbs", m.bw(from, to));
      t.add("small_bytes", p.small_bytes);
      t.add("latency_us", m.lat(from, to));
      t.end_row();
    }
}

CsvTable pairs_table(const RunResult& r) {
  TableBuilder t("pairs", r.run);
  const PairsResult& p = *r.pairs;
  add_links(t, p, p.nodes, "nodes", std::nullopt, std::nullopt, p.hosts);
  for (std::size_t l = 0; l < p.rails.size(); ++l)
    add_links(t, p, p.rails[l], "rail", std::nullopt, static_cast<int>(l), p.hosts);
  for (std::size_t n = 0; n < p.intra.size(); ++n)
    add_links(t, p, p.intra[n], "intra_node", static_cast<int>(n), std::nullopt, p.hosts);
  return t.take();
}

CsvTable findings_table(const RunResult& r) {
  TableBuilder t("findings", r.run);
  const auto add = [&t](const char* source, const Finding& f) {
    t.begin_row();
    t.add("source", std::string(source));
    t.add("kind", f.kind);
    t.add("nodes", f.nodes);
    t.add("hosts", f.hosts);
    t.add("rail", f.rail);
    t.add("value_gbs", f.value_gbs);
    t.add("reference_gbs", f.reference_gbs);
    t.add("metric", f.metric);
    t.add("value_us", f.value_us);
    t.add("reference_us", f.reference_us);
    t.add("confirmed", f.confirmed);
    t.add("message", f.message);
    t.end_row();
  };
  for (const Finding& f : r.findings) add("pairs", f);
  for (const Finding& f : r.unconfirmed) add("pairs", f);
  if (r.health) {
    for (const Finding& f : r.health->findings) add("health", f);
    for (const Finding& f : r.health->unconfirmed) add("health", f);
  }
  return t.take();
}

CsvTable placement_table(const RunResult& r) {
  TableBuilder t("placement", r.run);
  // Islands and bisection pairs share one table: a column either kind lacks is blank.
  const auto row = [&t](const std::string& kind, const std::string& island, const std::vector<std::string>& hosts,
                        std::optional<double> in_us, std::optional<double> cross_us, std::optional<double> ratio,
                        std::optional<std::size_t> halving, const BisectionPair* pair, std::optional<std::size_t> bytes,
                        std::optional<double> oversubscription) {
    t.begin_row();
    t.add("kind", kind);
    t.add("island", island);
    t.add("hosts", hosts);
    t.add("in_island_latency_us", in_us);
    t.add("cross_island_latency_us", cross_us);
    t.add("latency_ratio", ratio);
    t.add("halving", halving);
    t.add("host_a", pair ? pair->host_a : std::string());
    t.add("host_b", pair ? pair->host_b : std::string());
    t.add("bytes", bytes);
    t.add("isolated_gbs", pair ? pair->isolated_gbs : none);
    t.add("loaded_gbs", pair ? std::optional<double>(pair->loaded_gbs) : none);
    t.add("halving_oversubscription", oversubscription);
    t.end_row();
  };
  if (r.islands)
    for (const LatencyIsland& i : r.islands->islands)
      row("island", i.name, i.hosts, r.islands->in_island_latency_us, r.islands->cross_island_latency_us,
          r.islands->ratio, std::nullopt, nullptr, std::nullopt, none);
  if (r.bisection)
    for (std::size_t h = 0; h < r.bisection->halvings.size(); ++h)
      for (const BisectionPair& p : r.bisection->halvings[h].pairs)
        row("bisection_pair", "", {p.host_a, p.host_b}, none, none, none, h, &p, r.bisection->bytes,
            r.bisection->halvings[h].oversubscription);
  return t.take();
}

CsvTable projection_table(const RunResult& r) {
  TableBuilder t("projection", r.run);
  // The model-parallel row's own figures: its split and its compute time
  // (one replica's step on one GPU); it has no gradient input.
  struct Split {
    std::optional<int> tp, pp, dp;
    std::optional<double> compute_ms;
  };
  const auto row = [&t](const char* source, const std::optional<ProjectionInput>& in, std::optional<int> nodes,
                        int gpus, const std::string& choice, const Split& split, double comm_ms, double step_ms,
                        double speedup, double efficiency, std::optional<double> job_hours,
                        std::optional<double> cost_per_job) {
    t.begin_row();
    t.add("source", std::string(source));
    t.add("grad_bytes", in ? std::optional<std::size_t>(in->grad_bytes) : std::nullopt);
    t.add("compute_ms", in ? std::optional<double>(in->compute_ms) : split.compute_ms);
    t.add("overlap", in ? std::optional<double>(in->overlap) : none);
    t.add("sharded", in ? std::optional<bool>(in->sharded) : std::nullopt);
    t.add("nodes", nodes);
    t.add("gpus", gpus);
    t.add("choice", choice);
    t.add("tp", split.tp);
    t.add("pp", split.pp);
    t.add("dp", split.dp);
    t.add("comm_ms", comm_ms);
    t.add("step_ms", step_ms);
    t.add("speedup", speedup);
    t.add("efficiency", efficiency);
    t.add("job_hours", job_hours);
    t.add("cost_per_job", cost_per_job);
    t.end_row();
  };
  if (r.scaling)
    for (const ProjectionPoint& p : r.scaling->projection)
      row("ladder", r.scaling->projection_input, p.nodes, p.gpus, "", {}, p.comm_ms, p.step_ms, p.speedup, p.efficiency,
          none, none);
  if (r.gpu_ladder)
    for (const GpuProjectionPoint& p : r.gpu_ladder->projection)
      row("gpu_ladder", r.gpu_ladder->projection_input, std::nullopt, p.gpus, std::string(name(p.choice)), {},
          p.comm_ms, p.step_ms, p.speedup, p.efficiency, p.job_hours, p.cost_per_job);
  if (r.model_parallel && r.model_parallel->projection) {
    const ModelParallelResult& m = *r.model_parallel;
    const ModelParallelPoint& p = *m.projection;
    row("model_parallel", std::nullopt, m.nodes, m.gpus, "", {m.tp, m.pp, m.dp, m.compute_ms},
        p.tp_comm_ms + p.pp_comm_ms, p.step_ms, p.speedup, p.efficiency, none, none);
  }
  return t.take();
}

CsvTable storage_table(const RunResult& r) {
  TableBuilder t("storage", r.run);
  const StorageResult& s = *r.storage;
  const auto row = [&t, &s](const char* scope, std::optional<int> node, const std::string& host, int files,
                            std::uint64_t bytes, double write_s, double read_s, double write_gbs, double read_gbs) {
    t.begin_row();
    t.add("scope", std::string(scope));
    t.add("node", node);
    t.add("host", host);
    t.add("path", s.path);
    t.add("io_mode", s.io_mode);
    t.add("files", files);
    t.add("bytes", bytes);
    t.add("write_s", write_s);
    t.add("read_s", read_s);
    t.add("write_gbs", write_gbs);
    t.add("read_gbs", read_gbs);
    t.end_row();
  };
  row("all", std::nullopt, "", s.files_written, s.bytes_written, s.write_s, s.read_s, s.write_gbs, s.read_gbs);
  for (const StorageNode& n : s.nodes)
    row("node", n.node, n.host, n.files, n.bytes, n.write_s, n.read_s, n.write_gbs, n.read_gbs);
  return t.take();
}

}  // namespace

const std::vector<std::string>& csv_section_names() {
  static const std::vector<std::string> names{"ladder",    "gpu_ladder", "pairs",  "findings",
                                              "placement", "projection", "storage"};
  return names;
}

std::vector<CsvTable> section_csv_tables(const RunResult& result) {
  std::vector<CsvTable> tables;
  if (result.scaling) tables.push_back(ladder_table(result));
  if (result.gpu_ladder) tables.push_back(gpu_ladder_table(result));
  if (result.pairs) tables.push_back(pairs_table(result));
  tables.push_back(findings_table(result));
  tables.push_back(placement_table(result));
  tables.push_back(projection_table(result));
  if (result.storage) tables.push_back(storage_table(result));
  std::erase_if(tables, [](const CsvTable& t) { return t.rows.empty(); });
  return tables;
}

std::vector<std::string> record_csv_columns() {
  std::vector<std::string> names;
  const Flattener f{&names, nullptr};
  identity_fields(RunInfo{}, f);
  SweepRecord record;
  record.timing = Timing{};
  fields_of(static_cast<const SweepRecord&>(record), f);
  return names;
}

std::vector<CsvCell> record_csv_row(const RunInfo& run, const SweepRecord& record) {
  std::vector<CsvCell> cells;
  const Flattener f{nullptr, &cells};
  identity_fields(run, f);
  fields_of(record, f);
  return cells;
}

}  // namespace fabricbench
