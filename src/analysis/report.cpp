#include "fabricbench/analysis/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"
#include "fabricbench/core/exit_codes.hpp"
#include "fabricbench/core/sizes.hpp"

namespace fabricbench {
namespace {

std::string cluster_key(const RunResult& r) {
  std::string key = fmt::format("{}|{}|", r.run.transport, r.run.ranks);
  for (const std::string& h : r.run.hostnames) key += h + ",";
  return key;
}

std::string level_label(const LevelResult& l) {
  if (l.kind == LevelKind::rail) return "rail";
  return fmt::format("{} node{}", l.nodes_per_group, l.nodes_per_group == 1 ? "" : "s");
}

std::vector<std::string> topology_facts(const RunResult& r) {
  // what, value: in a fixed order so groups line up.
  std::vector<std::string> v(7, "-");
  if (!r.topology) return v;
  const Hardware hw = detect_hardware(*r.topology);
  v[0] = hw.gpu_model.value_or(hw.gpus_per_node == 0 ? "none" : "unknown");
  v[1] = std::to_string(hw.gpus_per_node);
  v[2] = hw.gpu_link;
  v[3] = hw.rdma_nics == 0 ? "0" : fmt::format("{} {}", hw.rdma_nics, hw.nic_kind);
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

}  // namespace

std::string cluster_text(const RunResult& r) {
  std::string hosts;
  for (std::size_t i = 0; i < r.run.hostnames.size() && i < 3; ++i) hosts += (i ? ", " : "") + r.run.hostnames[i];
  if (r.run.hostnames.size() > 3) hosts += fmt::format(", +{}", r.run.hostnames.size() - 3);
  return fmt::format("{} node{} ({}), {} ranks, {}", r.run.nodes, r.run.nodes == 1 ? "" : "s", hosts, r.run.ranks,
                     r.run.transport);
}

Spread spread_of(const std::vector<double>& values) {
  Spread s;
  s.runs = static_cast<int>(values.size());
  double sum = 0;
  for (const double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  if (values.size() > 1) {
    double sq = 0;
    for (const double v : values) sq += (v - s.mean) * (v - s.mean);
    s.sd = std::sqrt(sq / static_cast<double>(values.size() - 1));
  }
  return s;
}

std::optional<CostSummary> cost_of(const RunResult& result, const PriceInfo& override_price) {
  PriceInfo price = result.run.cost.value_or(PriceInfo{});
  if (override_price.per_gpu_hour || override_price.per_node_hour) price = override_price;
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
  return c;
}

int exit_code_for(Level level, bool fail_on_warn) {
  if (level == Level::fail) return exit_failed;
  if (level == Level::warn && fail_on_warn) return 1;
  return exit_ok;
}

Report build_report(std::vector<ReportRun> runs, const ReportConfig& config, const Expectations& expectations) {
  std::vector<Gate> gates;
  for (const std::string& text : config.expects) gates.push_back(parse_gate(text));
  const PriceInfo price{config.price_per_gpu_hour, config.price_per_node_hour};
  Report report;
  for (ReportRun& run : runs) {
    std::vector<Verdict> health = health_verdicts(run.result);
    std::vector<Verdict> refs = reference_verdicts(run.result, expectations);
    if (config.expect_reference) require_reference(refs);
    std::vector<Verdict> gate_verdicts;
    for (const Gate& g : gates) gate_verdicts.push_back(evaluate_gate(g, run.result));
    Level level = std::max(worst(health), worst(gate_verdicts));
    if (config.expect_reference) level = std::max(level, worst(refs));
    run.verdicts = std::move(health);
    run.verdicts.insert(run.verdicts.end(), refs.begin(), refs.end());
    run.verdicts.insert(run.verdicts.end(), gate_verdicts.begin(), gate_verdicts.end());
    run.level = level;
    run.cost = cost_of(run.result, price);
    report.level = std::max(report.level, level);
    report.runs.push_back(std::move(run));
  }
  report.exit_code = exit_code_for(report.level, config.fail_on_warn);

  std::map<std::string, std::size_t> group_of;
  for (std::size_t i = 0; i < report.runs.size(); ++i) {
    const std::string key = cluster_key(report.runs[i].result);
    auto [it, added] = group_of.emplace(key, report.groups.size());
    if (added) {
      const std::size_t g = report.groups.size();
      report.groups.push_back({g < 26 ? std::string(1, static_cast<char>('A' + g)) : fmt::format("G{}", g + 1),
                               cluster_text(report.runs[i].result),
                               {}});
    }
    report.groups[it->second].runs.push_back(i);
  }
  if (report.runs.size() < 2) return report;

  const std::size_t ngroups = report.groups.size();
  using Key = std::tuple<int, int, int, std::size_t>;
  std::map<Key, std::vector<std::vector<double>>> points;
  std::vector<Key> order;
  for (std::size_t g = 0; g < ngroups; ++g)
    for (const std::size_t i : report.groups[g].runs)
      for (const SweepRecord& r : report.runs[i].result.records) {
        if (!r.timing) continue;
        const Key key{static_cast<int>(r.op), static_cast<int>(r.dtype), static_cast<int>(r.placement), r.bytes};
        auto [it, added] = points.try_emplace(key, ngroups);
        if (added) order.push_back(key);
        it->second[g].push_back(r.timing->busbw_gbs);
      }
  std::sort(order.begin(), order.end());
  for (const Key& key : order) {
    CompareRow row;
    row.op = static_cast<Op>(std::get<0>(key));
    row.dtype = static_cast<DType>(std::get<1>(key));
    row.placement = static_cast<Placement>(std::get<2>(key));
    row.bytes = std::get<3>(key);
    for (const std::vector<double>& values : points[key])
      row.busbw.push_back(values.empty() ? std::nullopt : std::optional<Spread>(spread_of(values)));
    report.compare.push_back(std::move(row));
  }

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
