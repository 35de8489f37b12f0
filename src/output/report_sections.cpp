#include "fabricbench/output/file_writers.hpp"
#include "fabricbench/output/sections.hpp"

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fabricbench/analysis/headline.hpp"
#include "fabricbench/core/sizes.hpp"
#include "fabricbench/core/text.hpp"
#include "fabricbench/core/text_safety.hpp"
#include "fabricbench/output/printer.hpp"
#include "fabricbench/output/topology_summary.hpp"

namespace fabricbench {
namespace {

std::string spread_text(const std::optional<Spread>& s) {
  if (!s) return "-";
  if (s->runs == 1) return fmt::format("{:.3f}", s->mean);
  return fmt::format("{:.3f}±{:.3f}", s->mean, s->sd);
}

std::string ratio_text(const std::optional<Spread>& base, const std::optional<Spread>& other) {
  if (!base || !other || base->mean <= 0) return "-";
  return fmt::format("{:.2f}", other->mean / base->mean);
}

// RFC 4180 quoting where needed, formulas and control characters defused.
std::string csv_text(const std::string& text) { return csv_safe_cell(text); }

// A group's name in the comparison CSV: the --label its runs share, else
// their files' names ("run_a.json+run_a2.json"), so concatenated or pasted
// comparisons say which run is which.
std::string group_name(const Report& report, const ReportGroup& group) {
  std::string label;
  bool shared = true;
  for (const std::size_t i : group.runs) {
    const std::string& l = report.runs[i].result.run.label;
    if (l.empty() || (!label.empty() && l != label)) shared = false;
    label = l;
  }
  if (shared && !label.empty()) return label;
  std::string files;
  for (const std::size_t i : group.runs)
    files += (files.empty() ? "" : "+") + std::filesystem::path(report.runs[i].path).filename().string();
  return files;
}

}  // namespace

void print_budget(const BudgetRecord& budget, std::optional<double> duration_s, std::ostream& out) {
  out << fmt::format("#\n# budget {:g} s: the run took {:.1f} s; {} cut\n", budget.seconds, duration_s.value_or(0.0),
                     budget.cuts.empty() ? std::string("nothing") : fmt::format("{}", budget.cuts.size()));
  for (const PhaseSpend& p : budget.phases)
    out << fmt::format("#   {:<7} share {:6.1f} s, used {:6.1f} s\n", name(p.phase), p.share_s, p.used_s);
  for (const Cut& c : budget.cuts)
    out << fmt::format("#   cut ({}): {}: {} {}\n", c.reason, name(c.phase), c.what, c.action);
}

void print_health(const HealthResult& health, std::ostream& out) {
  out << fmt::format("# health pass over node pairs ({} and {}, {:.1f} s into the run): {}\n",
                     format_size(health.small_bytes), format_size(health.bytes), health.seconds,
                     health.findings.empty() ? std::string("no slow node or link")
                                             : fmt::format("{} finding(s)", health.findings.size()));
  for (const Finding& f : health.findings) out << "#   " << f.message << '\n';
}

void print_decision(const ReportRun& run, std::ostream& out) {
  out << fmt::format("#\n# Verdict: {}\n", name(run.level));
  for (const HeadlineLine& line : headline(run)) out << fmt::format("#   {:<13} {}\n", line.topic + ":", line.text);
  out << "# Verdicts, worst first:\n";
  for (const Verdict& v : run.verdicts) {
    out << fmt::format("#   {:<4} {:<9} {}: {}\n", name(v.level), name(v.kind), v.subject, v.reason);
    if (!v.cause.empty()) out << fmt::format("#        cause: {}\n", v.cause);
    if (!v.fix.empty()) out << fmt::format("#        fix: {}\n", v.fix);
    if (!v.source.empty()) out << fmt::format("#        source: {}\n", v.source);
  }
}

void print_report(const Report& report, std::ostream& out) {
  for (const ReportRun& run : report.runs) {
    const RunResult& r = run.result;
    out << fmt::format("# {}: fabricbench {} (git {}) on {}, started {}\n", run.path, r.tool.version, r.tool.git,
                       cluster_text(r), r.run.start_utc);
    TablePrinter table(out);
    table.columns_for(r);
    std::vector<SweepRecord> point;
    for (const SweepRecord& rec : r.records) {
      if (!point.empty() && (rec.op != point.front().op || rec.dtype != point.front().dtype ||
                             rec.bytes != point.front().bytes || rec.redop != point.front().redop)) {
        table.point(point);
        point.clear();
      }
      point.push_back(rec);
    }
    if (!point.empty()) table.point(point);
    if (!r.records.empty()) table.summary(r);
    if (r.scaling) print_ladder(*r.scaling, out);
    if (r.health) print_health(*r.health, out);
    if (r.gpu_ladder) print_gpu_ladder(*r.gpu_ladder, out);
    if (r.pairs) print_pairs(*r.pairs, r.findings, out);
    if (r.islands) print_islands(*r.islands, out);
    if (r.nccl) print_nccl_usage(*r.nccl, out);
    if (r.bisection) print_bisection(*r.bisection, out);
    if (r.storage) print_storage(*r.storage, out);
    if (r.budget) print_budget(*r.budget, r.duration_s, out);
    if (r.model_parallel) print_model_parallel(*r.model_parallel, out);
    if (r.topology) {
      out << "#\n";
      write_topology_summary(*r.topology, out);
    }
    if (run.cost) {
      const CostSummary& c = *run.cost;
      out << fmt::format("#\n# Cost at {}\n",
                         c.price.per_gpu_hour
                             ? fmt::format("{} per {}-hour", money_text(*c.price.per_gpu_hour, c.price.currency),
                                           unit_word(r) == "GPUs" ? "GPU" : "rank")
                             : fmt::format("{} per node-hour", money_text(*c.price.per_node_hour, c.price.currency)));
      if (c.run_cost)
        out << fmt::format("#   this run: {} ({:.1f} s on {} {}, {} node{})\n",
                           money_text(*c.run_cost, c.price.currency), r.duration_s.value_or(0), r.run.ranks,
                           unit_word(r), r.run.nodes, r.run.nodes == 1 ? "" : "s");
      else
        out << "#   this run: unknown (" << c.why_no_run_cost << ")\n";
      if (!c.training.empty()) {
        out << fmt::format("#   {:>6} {:>6} {:>10} {:>16}\n", "nodes", unit_word(r), "step (ms)", "per 1000 steps");
        for (const CostPoint& p : c.training)
          out << fmt::format("    {:>6} {:>6} {:>10.3f} {:>16}\n", p.nodes, p.gpus, p.step_ms,
                             money_text(p.per_1000_steps, c.price.currency));
      }
      if (const auto& mp = c.model_parallel; mp && r.model_parallel)
        out << fmt::format("#   model parallel (tp {} x pp {} x dp {}, {} {}): step {:.3f} ms, {} per 1000 steps\n",
                           r.model_parallel->tp, r.model_parallel->pp, r.model_parallel->dp, mp->gpus, unit_word(r),
                           mp->step_ms, money_text(mp->per_1000_steps, c.price.currency));
    }
    print_decision(run, out);
  }
  if (report.runs.size() < 2) return;
  out << "#\n# Comparison (busbw GB/s: mean±sd over each group's runs; ratio to A)\n";
  for (const ReportGroup& g : report.groups) {
    out << fmt::format("#   {}: {}, {} run{}:", g.label, g.cluster, g.runs.size(), g.runs.size() == 1 ? "" : "s");
    for (const std::size_t i : g.runs) out << ' ' << report.runs[i].path;
    out << '\n';
  }
  out << fmt::format("# {:<14} {:>8} {:>4} {:>10}", "op", "dtype", "pl", "size");
  for (const ReportGroup& g : report.groups) out << fmt::format(" {:>17}", g.label);
  for (std::size_t g = 1; g < report.groups.size(); ++g) out << fmt::format(" {:>7}", report.groups[g].label + "/A");
  out << '\n';
  for (const CompareRow& row : report.compare) {
    out << fmt::format("  {:<14} {:>8} {:>4} {:>10}", name(row.op), name(row.dtype),
                       row.placement == Placement::in_place ? "ip" : "oop", format_size(row.bytes));
    for (const auto& s : row.busbw) out << fmt::format(" {:>17}", spread_text(s));
    for (std::size_t g = 1; g < row.busbw.size(); ++g)
      out << fmt::format(" {:>7}", ratio_text(row.busbw[0], row.busbw[g]));
    out << '\n';
  }
  if (!report.ladder.empty()) {
    out << "#\n# Ladder comparison (median busbw GB/s; efficiency vs 1 node)\n";
    out << fmt::format("# {:<14} {:<18}", "op", "level");
    for (const ReportGroup& g : report.groups) out << fmt::format(" {:>17} {:>6}", g.label, "eff");
    out << '\n';
    for (const LadderRow& row : report.ladder) {
      out << fmt::format("  {:<14} {:<18}", name(row.op), row.level);
      for (std::size_t g = 0; g < row.busbw.size(); ++g)
        out << fmt::format(" {:>17} {:>6}", spread_text(row.busbw[g]),
                           row.efficiency[g] ? fmt::format("{:.0f}%", *row.efficiency[g] * 100) : "-");
      out << '\n';
    }
  }
  if (!report.topology.empty()) {
    out << "#\n# Topology comparison (* differs)\n";
    for (const TopologyRow& row : report.topology) {
      out << fmt::format("  {} {:<20}", row.differs ? '*' : ' ', row.what);
      for (const std::string& v : row.values) out << fmt::format(" {:>20}", v);
      out << '\n';
    }
  }
  out << fmt::format("#\n# Overall verdict: {}\n", name(report.level));
}

void write_report_csv(const Report& report, std::ostream& out) {
  if (report.runs.size() == 1) {
    write_csv(report.runs.front().result, out);
    return;
  }
  std::vector<std::string> names;
  for (const ReportGroup& g : report.groups) names.push_back(group_name(report, g));
  out << "op,dtype,placement,bytes";
  for (const std::string& n : names)
    for (const char* column : {"busbw_gbs_mean", "busbw_gbs_sd", "busbw_gbs_min", "busbw_gbs_max", "runs"})
      out << ',' << csv_text(fmt::format("{}:{}", n, column));
  for (std::size_t g = 1; g < names.size(); ++g) out << ',' << csv_text(fmt::format("{}:busbw_ratio", names[g]));
  out << '\n';
  for (const CompareRow& row : report.compare) {
    out << fmt::format("{},{},{},{}", name(row.op), name(row.dtype), name(row.placement), row.bytes);
    for (const auto& s : row.busbw) {
      if (s)
        out << fmt::format(",{},{},{},{},{}", s->mean, s->sd, s->min, s->max, s->runs);
      else
        out << ",,,,,0";
    }
    for (std::size_t g = 1; g < row.busbw.size(); ++g) {
      if (row.busbw[0] && row.busbw[g] && row.busbw[0]->mean > 0)
        out << fmt::format(",{}", row.busbw[g]->mean / row.busbw[0]->mean);
      else
        out << ',';
    }
    out << '\n';
  }
}

}  // namespace fabricbench
