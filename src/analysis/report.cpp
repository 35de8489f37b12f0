#include "fabricbench/analysis/report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "fabricbench/analysis/achievable.hpp"
#include "fabricbench/analysis/ladders.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/core/exit_codes.hpp"
#include "fabricbench/core/sizes.hpp"
#include "fabricbench/core/stats.hpp"

namespace fabricbench {
namespace {

// A finding as a comparison names it: what and where, without its figures
// (which differ from run to run).
std::string finding_text(const Finding& f) {
  const std::string rail = f.rail ? fmt::format(" rail {}", *f.rail) : std::string();
  if (f.kind == FindingKind::slow_link && f.hosts.size() == 2)
    return fmt::format("slow link {} -> {}{}", f.hosts[0], f.hosts[1], rail);
  if (f.kind == FindingKind::slow_nic && !f.hosts.empty()) return fmt::format("slow NIC {}{}", f.hosts[0], rail);
  if (f.kind == FindingKind::slow_uplink) return fmt::format("slow uplink of {}", fmt::join(f.hosts, " "));
  if (f.kind == FindingKind::slow_node && !f.hosts.empty()) return fmt::format("slow node {}", f.hosts[0]);
  return f.message;
}

std::set<std::string> group_findings(const Report& report, const ReportGroup& group) {
  std::set<std::string> out;
  for (const std::size_t i : group.runs)
    for (const Finding& f : report.runs[i].result.findings) out.insert(finding_text(f));
  return out;
}

// Each measured node-to-node link of a group's runs by its two hosts: the
// mean bandwidth over the runs that measured it.
std::map<std::pair<std::string, std::string>, double> group_links(const Report& report, const ReportGroup& group) {
  std::map<std::pair<std::string, std::string>, std::vector<double>> values;
  for (const std::size_t i : group.runs) {
    const std::optional<PairsResult>& p = report.runs[i].result.pairs;
    if (!p) continue;
    for (int a = 0; a < p->nodes.size; ++a)
      for (int b = 0; b < p->nodes.size; ++b) {
        const std::optional<double>& bw = p->nodes.bw(a, b);
        const auto ua = static_cast<std::size_t>(a);
        const auto ub = static_cast<std::size_t>(b);
        if (a == b || !bw || ua >= p->hosts.size() || ub >= p->hosts.size()) continue;
        values[{p->hosts[ua], p->hosts[ub]}].push_back(*bw);
      }
  }
  std::map<std::pair<std::string, std::string>, double> out;
  for (const auto& [link, v] : values) out[link] = spread_of(v).mean;
  return out;
}

std::string group_title(const ReportGroup& g) { return fmt::format("{} ({})", g.label, g.name); }

GroupHeadline headline_of(const Report& report, std::size_t g) {
  GroupHeadline h;
  h.group = g;
  std::vector<std::string> parts;
  // Per op, in the comparison's order: the geometric mean of the large sizes' ratios.
  std::map<Op, std::pair<double, OpDifference>> ops;  // log sum, difference
  std::vector<Op> order;
  for (const CompareRow& row : report.compare) {
    if (row.bytes < headline_min_bytes) continue;
    const CompareRatio& r = row.ratio[g];
    if (r.noise != Noise::none && r.noise != Noise::within_spread) continue;
    auto [it, added] = ops.try_emplace(row.op, 0.0, OpDifference{row.op, 1.0, 0, 0});
    if (added) order.push_back(row.op);
    ++it->second.second.points;
    if (r.value && *r.value > 0)
      it->second.first += std::log(*r.value);
    else
      ++it->second.second.noisy;
  }
  for (const Op op : order) {
    OpDifference d = ops[op].second;
    d.ratio = std::exp(ops[op].first / d.points);
    h.ops.push_back(d);
    if (d.noisy == d.points)
      parts.push_back(fmt::format("{} within noise", name(op)));
    else if (std::abs(d.ratio - 1) < 0.005)
      parts.push_back(fmt::format("{} the same busbw", name(op)));
    else
      parts.push_back(
          fmt::format("{} {:.0f}% {} busbw", name(op), std::abs(1 - d.ratio) * 100, d.ratio < 1 ? "lower" : "higher"));
  }
  std::string text = fmt::format("{} vs {}: ", group_title(report.groups[g]), group_title(report.groups[0]));
  if (parts.empty())
    text += fmt::format("no sweep point >= {} measured by both", format_size(headline_min_bytes));
  else {
    for (std::size_t i = 0; i < parts.size(); ++i) text += (i ? ", " : "") + parts[i];
    text += fmt::format(" at >= {} (geometric mean)", format_size(headline_min_bytes));
  }

  const auto base_links = group_links(report, report.groups[0]);
  const auto links = group_links(report, report.groups[g]);
  double worst = 0;
  for (const auto& [link, bw] : links) {
    const auto at = base_links.find(link);
    if (at == base_links.end() || at->second <= 0 || bw <= 0) continue;
    const double change = std::abs(std::log(bw / at->second));
    if (change >= std::log(1.1) && change > worst) {
      worst = change;
      h.link = LinkDifference{link.first, link.second, at->second, bw};
    }
  }
  if (h.link) {
    const double r = h.link->other_gbs / h.link->base_gbs;
    text += fmt::format("; link {} -> {} {:.1f}x {} ({:.1f} vs {:.1f} GB/s)", h.link->from, h.link->to,
                        r < 1 ? 1 / r : r, r < 1 ? "slower" : "faster", h.link->other_gbs, h.link->base_gbs);
  }
  const std::set<std::string> base_findings = group_findings(report, report.groups[0]);
  const std::set<std::string> findings = group_findings(report, report.groups[g]);
  std::set_difference(findings.begin(), findings.end(), base_findings.begin(), base_findings.end(),
                      std::back_inserter(h.only_here));
  std::set_difference(base_findings.begin(), base_findings.end(), findings.begin(), findings.end(),
                      std::back_inserter(h.only_base));
  for (const std::string& f : h.only_here) text += fmt::format("; {} only in {}", f, report.groups[g].label);
  for (const std::string& f : h.only_base) text += fmt::format("; {} only in {}", f, report.groups[0].label);
  h.text = std::move(text);
  return h;
}

std::vector<std::string> topology_facts(const RunResult& r) {
  // what, value: in a fixed order so groups line up.
  std::vector<std::string> v(7, "-");
  if (!r.topology) return v;
  const Hardware hw = detect_hardware(*r.topology);
  v[0] = hw.gpu_model.value_or(hw.gpus_per_node == 0 ? "none" : "unknown");
  v[1] = std::to_string(hw.gpus_per_node);
  v[2] = name(hw.gpu_link);
  v[3] = hw.rdma_nics == 0 ? "0" : fmt::format("{} {}", hw.rdma_nics, hw.nic_kind ? name(*hw.nic_kind) : "");
  v[4] = hw.nic_rate_gbps ? fmt::format("{:.0f} Gb/s", *hw.nic_rate_gbps) : "-";
  v[5] = hw.pcie_gen ? fmt::format("Gen{} x{}", *hw.pcie_gen, hw.pcie_width.value_or(0)) : "-";
  v[6] = std::to_string(r.topology->anomalies.size());
  return v;
}

const std::vector<std::string>& topology_fact_names() {
  static const std::vector<std::string> names{"GPU model", "GPUs per node", "GPU interconnect", "RDMA NICs per node",
                                              "NIC rate",  "GPU PCIe link", "anomalies"};
  return names;
}

std::string group_series_label(const Report& report, std::size_t g) {
  const ReportGroup& group = report.groups[g];
  return report.groups.size() > 1 ? fmt::format("{}: {}, {}", group.label, group.name, group.cluster) : group.cluster;
}

void add_busbw_charts(Report& report) {
  std::set<Op> ops;
  for (const ReportRun& run : report.runs)
    for (const SweepRecord& r : run.result.records)
      if (r.timing && r.bytes > 0) ops.insert(r.op);
  for (const Op op : ops) {
    BusbwChart chart;
    chart.op = op;
    for (std::size_t g = 0; g < report.groups.size(); ++g)
      for (const Placement placement : {Placement::out_of_place, Placement::in_place}) {
        std::map<std::size_t, std::vector<double>> by_size;
        for (const std::size_t i : report.groups[g].runs)
          for (const SweepRecord& r : report.runs[i].result.records)
            if (r.op == op && r.timing && r.bytes > 0 && r.placement == placement)
              by_size[r.bytes].push_back(r.timing->busbw_gbs);
        if (by_size.empty()) continue;
        ChartSeries series;
        series.label = group_series_label(report, g);
        series.group = g;
        series.placement = placement;
        for (const auto& [bytes, values] : by_size) series.points.push_back({bytes, spread_of(values)});
        chart.series.push_back(std::move(series));
      }
    report.busbw_charts.push_back(std::move(chart));
  }
}

void add_ladder_charts(Report& report) {
  for (std::size_t i = 0; i < report.runs.size(); ++i) {
    const std::optional<ScaleResult>& s = report.runs[i].result.scaling;
    if (!s || s->levels.empty()) continue;
    LadderChart chart;
    chart.run = i;
    chart.bytes = s->bytes;
    for (const LevelResult& l : s->levels) {
      const std::string label = level_label(l);
      auto at = std::find(chart.levels.begin(), chart.levels.end(), label);
      if (at == chart.levels.end()) at = chart.levels.insert(chart.levels.end(), label);
      if (std::find(chart.ops.begin(), chart.ops.end(), l.op) == chart.ops.end()) chart.ops.push_back(l.op);
      chart.bars.push_back(
          {l.op, static_cast<std::size_t>(at - chart.levels.begin()), l.busbw_median_gbs, l.efficiency});
    }
    report.ladder_charts.push_back(std::move(chart));
  }
}

MatrixChart matrix_chart(const PairMatrix& m, const std::vector<std::string>& labels, bool bandwidth,
                         const std::vector<Finding>& findings) {
  MatrixChart c;
  c.unit = bandwidth ? "GB/s" : "us";
  c.higher_is_better = bandwidth;
  c.size = m.size;
  c.labels = labels;
  c.labels.resize(static_cast<std::size_t>(m.size));
  for (int i = 0; i < m.size; ++i)
    if (c.labels[static_cast<std::size_t>(i)].empty()) c.labels[static_cast<std::size_t>(i)] = std::to_string(i);
  std::set<int> slow_nodes;
  std::set<std::pair<int, int>> slow_links;
  for (const Finding& f : findings) {
    // A slow NIC slows its node's summed links too.
    if ((f.kind == FindingKind::slow_node || f.kind == FindingKind::slow_nic) && !f.nodes.empty())
      slow_nodes.insert(f.nodes[0]);
    if (f.kind == FindingKind::slow_link && f.nodes.size() == 2) {
      slow_links.insert({f.nodes[0], f.nodes[1]});
      slow_links.insert({f.nodes[1], f.nodes[0]});
    }
    // A slow uplink: every pair across it.
    if (f.kind == FindingKind::slow_uplink) {
      const std::set<int> far(f.nodes.begin(), f.nodes.end());
      for (int i = 0; i < m.size; ++i)
        for (int j = 0; j < m.size; ++j)
          if (far.contains(i) != far.contains(j)) slow_links.insert({i, j});
    }
  }
  std::vector<double> values;
  for (int i = 0; i < m.size; ++i)
    for (int j = 0; j < m.size; ++j) {
      const std::optional<double>& v = bandwidth ? m.bw(i, j) : m.lat(i, j);
      if (i == j || !v) continue;
      c.cells.push_back({i, j, *v, slow_links.contains({i, j}) || slow_nodes.contains(i) || slow_nodes.contains(j)});
      values.push_back(*v);
    }
  if (!values.empty()) {
    c.median = median(values);
    c.low = *std::min_element(values.begin(), values.end());
    c.high = *std::max_element(values.begin(), values.end());
  }
  return c;
}

void add_matrix_charts(Report& report) {
  for (std::size_t i = 0; i < report.runs.size(); ++i) {
    const ReportRun& run = report.runs[i];
    if (!run.result.pairs) continue;
    const PairsResult& p = *run.result.pairs;
    const auto measured = [](const MatrixChart& c) { return !c.cells.empty(); };
    if (p.nodes.size > 1) {
      MatrixChart bw = matrix_chart(p.nodes, p.hosts, true, run.result.findings);
      bw.id = fmt::format("pairs-{}", i);
      bw.title = fmt::format("Node-to-node send/recv bandwidth at {}", format_size(p.bytes));
      bw.caption = fmt::format("{}: row sends to column, all {} rails at once", run.path, p.ranks_per_node);
      if (measured(bw)) report.matrix_charts.push_back(std::move(bw));
      MatrixChart lat = matrix_chart(p.nodes, p.hosts, false, {});  // the findings are about bandwidth
      lat.id = fmt::format("pairs-{}-latency", i);
      lat.title = fmt::format("Node-to-node latency at {}", format_size(p.small_bytes));
      lat.caption = fmt::format("{}: row sends to column", run.path);
      if (measured(lat)) report.matrix_charts.push_back(std::move(lat));
    }
    std::vector<std::string> locals;
    for (int l = 0; l < p.ranks_per_node; ++l) locals.push_back(fmt::format("local {}", l));
    for (std::size_t n = 0; n < p.intra.size() && p.ranks_per_node > 1; ++n) {
      MatrixChart c = matrix_chart(p.intra[n], locals, true, {});
      c.id = fmt::format("pairs-{}-node-{}", i, n);
      c.title = fmt::format("Within {}: send/recv bandwidth at {}", n < p.hosts.size() ? p.hosts[n] : std::to_string(n),
                            format_size(p.bytes));
      c.caption = fmt::format("{}: local rank to local rank", run.path);
      if (measured(c)) report.matrix_charts.push_back(std::move(c));
    }
  }
}

}  // namespace

std::string_view name(Noise noise) {
  switch (noise) {
    case Noise::none:
      return "";
    case Noise::missing:
      return "missing";
    case Noise::below_floor:
      return "below noise floor";
    case Noise::within_spread:
      return "within spread";
  }
  return "";
}

std::string group_key(const std::string& path, const RunResult& result) {
  return result.run.label.empty() ? "file:" + path : "label:" + result.run.label;
}

CompareRatio compare_ratio(const std::optional<Spread>& base, const std::optional<Spread>& other, double floor_gbs) {
  if (!base || !other || base->runs == 0 || other->runs == 0) return {std::nullopt, Noise::missing};
  if (base->mean < floor_gbs || other->mean < floor_gbs || base->mean <= 0) return {std::nullopt, Noise::below_floor};
  if (base->runs > 1 || other->runs > 1) {
    const double se = std::sqrt(base->sd * base->sd / base->runs + other->sd * other->sd / other->runs);
    if (std::abs(other->mean - base->mean) <= 2 * se) return {std::nullopt, Noise::within_spread};
  }
  return {other->mean / base->mean, Noise::none};
}

std::string unit_word(const RunResult& result) { return result.run.transport == "mpi" ? "ranks" : "GPUs"; }

std::string cluster_text(const RunResult& r) {
  std::string hosts;
  for (std::size_t i = 0; i < r.run.hostnames.size() && i < 3; ++i) hosts += (i ? ", " : "") + r.run.hostnames[i];
  if (r.run.hostnames.size() > 3) hosts += fmt::format(", +{}", r.run.hostnames.size() - 3);
  return fmt::format("{} node{} ({}), {} ranks, {}", r.run.nodes, r.run.nodes == 1 ? "" : "s", hosts, r.run.ranks,
                     r.run.transport);
}

std::optional<CostSummary> cost_of(const RunResult& result, const PriceInfo& override_price) {
  PriceInfo price = result.run.cost.value_or(PriceInfo{});
  const std::string recorded = price.currency;
  if (override_price.per_gpu_hour || override_price.per_node_hour) price = override_price;
  price.currency = !override_price.currency.empty() ? override_price.currency
                   : !recorded.empty()              ? recorded
                                                    : std::string(default_currency);
  if (!price.per_gpu_hour && !price.per_node_hour) return std::nullopt;
  CostSummary c;
  c.price = price;
  // Price per hour of `gpus` GPUs on `nodes` nodes: by GPU when given, else by node.
  const auto hourly = [&price](int gpus, int nodes) {
    return price.per_gpu_hour ? *price.per_gpu_hour * gpus : *price.per_node_hour * nodes;
  };
  if (result.duration_s)
    c.run_cost = *result.duration_s / 3600.0 * hourly(result.run.ranks, result.run.nodes);
  else
    c.why_no_run_cost = "the run recorded no duration";
  if (result.scaling) {
    const int per_node = std::max(1, result.scaling->ranks_per_node);
    for (const ProjectionPoint& p : result.scaling->projection)
      c.training.push_back({p.nodes, p.gpus, p.step_ms,
                            p.step_ms * 1000.0 / 3.6e6 * hourly(p.gpus, std::max(p.nodes, p.gpus / per_node))});
  }
  if (result.model_parallel && result.model_parallel->projection) {
    const ModelParallelResult& m = *result.model_parallel;
    const double step_ms = m.projection->step_ms;
    c.model_parallel = CostPoint{m.nodes, m.gpus, step_ms, step_ms * 1000.0 / 3.6e6 * hourly(m.gpus, m.nodes)};
  }
  return c;
}

int exit_code_for(Level level, bool fail_on_warn) {
  if (level == Level::fail) return exit_failed;
  if (level == Level::warn && fail_on_warn) return 1;
  return exit_ok;
}

RunVerdicts judge_run(const RunResult& result, const ReportConfig& config, const Expectations& expectations) {
  std::vector<Verdict> health = health_verdicts(result);
  if (result.scaling) {
    std::vector<std::string> slow;
    for (const Verdict& v : health)
      if (v.level >= Level::warn && (v.cause_kind == "slow_node" || v.cause_kind == "slow_link" ||
                                     v.cause_kind == "slow_nic" || v.cause_kind == "slow_uplink"))
        for (const std::string& h : v.hosts)
          if (std::find(slow.begin(), slow.end(), h) == slow.end()) slow.push_back(h);
    const std::vector<Verdict> scaling = scaling_verdicts(*result.scaling, config.min_scaling_efficiency, slow);
    health.insert(health.end(), scaling.begin(), scaling.end());
  }
  std::vector<Verdict> refs = reference_verdicts(result, expectations);
  if (config.expect_reference) require_reference(refs);
  std::vector<Verdict> gate_verdicts;
  for (const std::string& text : config.expects) gate_verdicts.push_back(evaluate_gate(parse_gate(text), result));
  RunVerdicts out;
  out.level = std::max(worst(health), worst(gate_verdicts));
  if (config.expect_reference) out.level = std::max(out.level, worst(refs));
  out.verdicts = std::move(health);
  out.verdicts.insert(out.verdicts.end(), refs.begin(), refs.end());
  out.verdicts.insert(out.verdicts.end(), gate_verdicts.begin(), gate_verdicts.end());
  const std::vector<Verdict> layers = achievable_verdicts(result);
  out.verdicts.insert(out.verdicts.end(), layers.begin(), layers.end());
  // Worst first: the summary opens with what to act on.
  std::stable_sort(out.verdicts.begin(), out.verdicts.end(),
                   [](const Verdict& a, const Verdict& b) { return a.level > b.level; });
  return out;
}

Report build_report(std::vector<ReportRun> runs, const ReportConfig& config, const Expectations& expectations) {
  for (const std::string& text : config.expects) (void)parse_gate(text);  // a bad gate is refused before any run
  const PriceInfo price{config.price_per_gpu_hour, config.price_per_node_hour, config.currency};
  Report report;
  for (ReportRun& run : runs) {
    RunVerdicts judged = judge_run(run.result, config, expectations);
    run.verdicts = std::move(judged.verdicts);
    const Level level = judged.level;
    run.level = level;
    run.cost = cost_of(run.result, price);
    // The GPU ladder's cost per job at the GPU price given to `report`.
    if (run.result.gpu_ladder && config.price_per_gpu_hour) {
      GpuLadderResult& g = *run.result.gpu_ladder;
      std::vector<ServerPrice> servers;
      for (const ServerCost& s : g.servers) servers.push_back({s.gpus, s.price_per_hour});
      price_gpu_ladder(g, g.steps, config.price_per_gpu_hour, servers);
    }
    report.level = std::max(report.level, level);
    report.runs.push_back(std::move(run));
  }
  report.exit_code = exit_code_for(report.level, config.fail_on_warn);

  std::map<std::string, std::size_t> group_of;
  for (std::size_t i = 0; i < report.runs.size(); ++i) {
    const ReportRun& run = report.runs[i];
    auto [it, added] = group_of.emplace(group_key(run.path, run.result), report.groups.size());
    if (added) {
      const std::size_t g = report.groups.size();
      report.groups.push_back(
          {g < 26 ? std::string(1, static_cast<char>('A' + g)) : fmt::format("G{}", g + 1),
           run.result.run.label.empty() ? std::filesystem::path(run.path).filename().string() : run.result.run.label,
           cluster_text(run.result),
           {}});
    }
    report.groups[it->second].runs.push_back(i);
  }
  add_busbw_charts(report);
  add_ladder_charts(report);
  add_matrix_charts(report);
  if (report.runs.size() < 2) return report;

  const std::size_t ngroups = report.groups.size();
  // op, dtype, redop, root, placement, size; -1 for an op without a redop or a root.
  using Key = std::tuple<int, int, int, int, int, std::size_t>;
  std::map<Key, std::vector<std::vector<double>>> points;
  std::map<Op, double> peak;  // the highest busbw of each op, any group
  for (std::size_t g = 0; g < ngroups; ++g)
    for (const std::size_t i : report.groups[g].runs)
      for (const SweepRecord& r : report.runs[i].result.records) {
        if (!r.timing) continue;
        const Key key{static_cast<int>(r.op), static_cast<int>(r.dtype),     r.redop ? static_cast<int>(*r.redop) : -1,
                      r.root.value_or(-1),    static_cast<int>(r.placement), r.bytes};
        auto [it, added] = points.try_emplace(key, ngroups);
        it->second[g].push_back(r.timing->busbw_gbs);
      }
  for (const auto& [key, by_group] : points) {
    CompareRow row;
    row.op = static_cast<Op>(std::get<0>(key));
    row.dtype = static_cast<DType>(std::get<1>(key));
    if (std::get<2>(key) >= 0) row.redop = static_cast<RedOp>(std::get<2>(key));
    if (std::get<3>(key) >= 0) row.root = std::get<3>(key);
    row.placement = static_cast<Placement>(std::get<4>(key));
    row.bytes = std::get<5>(key);
    for (const std::vector<double>& values : by_group) {
      row.busbw.push_back(values.empty() ? std::nullopt : std::optional<Spread>(spread_of(values)));
      if (row.busbw.back()) peak[row.op] = std::max(peak[row.op], row.busbw.back()->mean);
    }
    report.compare.push_back(std::move(row));
  }
  for (CompareRow& row : report.compare) {
    const double floor = noise_floor_fraction * peak[row.op];
    for (std::size_t g = 0; g < ngroups; ++g)
      row.ratio.push_back(g == 0 ? CompareRatio{row.busbw[0] ? std::optional<double>(1.0) : std::nullopt,
                                                row.busbw[0] ? Noise::none : Noise::missing}
                                 : compare_ratio(row.busbw[0], row.busbw[g], floor));
  }
  for (std::size_t g = 1; g < ngroups; ++g) report.headline.push_back(headline_of(report, g));

  using LadderKey = std::pair<int, std::string>;
  std::map<LadderKey, std::pair<std::vector<std::vector<double>>, std::vector<std::vector<double>>>> ladder;
  std::vector<LadderKey> ladder_order;
  for (std::size_t g = 0; g < ngroups; ++g)
    for (const std::size_t i : report.groups[g].runs) {
      if (!report.runs[i].result.scaling) continue;
      for (const LevelResult& l : report.runs[i].result.scaling->levels) {
        const LadderKey key{static_cast<int>(l.op), level_label(l)};
        auto [it, added] = ladder.try_emplace(key, std::vector<std::vector<double>>(ngroups),
                                              std::vector<std::vector<double>>(ngroups));
        if (added) ladder_order.push_back(key);
        it->second.first[g].push_back(l.busbw_median_gbs);
        if (l.efficiency) it->second.second[g].push_back(*l.efficiency);
      }
    }
  for (const LadderKey& key : ladder_order) {
    LadderRow row;
    row.op = static_cast<Op>(key.first);
    row.level = key.second;
    const auto& [bw, eff] = ladder[key];
    for (std::size_t g = 0; g < ngroups; ++g) {
      row.busbw.push_back(bw[g].empty() ? std::nullopt : std::optional<Spread>(spread_of(bw[g])));
      row.efficiency.push_back(eff[g].empty() ? std::nullopt : std::optional<double>(spread_of(eff[g]).mean));
    }
    report.ladder.push_back(std::move(row));
  }

  const bool any_topology = std::any_of(report.runs.begin(), report.runs.end(),
                                        [](const ReportRun& r) { return r.result.topology.has_value(); });
  if (ngroups > 1 && any_topology) {
    for (std::size_t f = 0; f < topology_fact_names().size(); ++f) {
      TopologyRow row;
      row.what = topology_fact_names()[f];
      for (const ReportGroup& g : report.groups)
        row.values.push_back(topology_facts(report.runs[g.runs.front()].result)[f]);
      row.differs = std::set<std::string>(row.values.begin(), row.values.end()).size() > 1;
      report.topology.push_back(std::move(row));
    }
  }
  return report;
}

}  // namespace fabricbench
