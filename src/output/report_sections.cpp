#include "fabricbench/output/file_writers.hpp"
#include "fabricbench/output/sections.hpp"

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

// "~" where the point is within noise, "-" where a side did not measure it.
std::string ratio_text(const CompareRatio& r) {
  if (r.value) return fmt::format("{:.2f}", *r.value);
  return r.noise == Noise::missing ? "-" : "~";
}

// RFC 4180 quoting where needed, formulas and control characters defused.
std::string csv_text(const std::string& text) { return csv_safe_cell(text); }

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

void print_stragglers(const StragglersResult& stragglers, std::ostream& out) {
  if (!stragglers.shared.empty()) {
    out << "# pace round: not run: " << stragglers.shared << '\n';
    return;
  }
  const PaceRound* first = stragglers.rounds.empty() ? nullptr : &stragglers.rounds.front();
  if (first == nullptr || first->iterations == 0) {
    out << "# pace round: did not fit in its share of the budget; who the collectives wait for is not known\n";
    return;
  }
  const std::string work = first->work_fills == 1
                               ? fmt::format("a {} fill", format_size(first->work_bytes))
                               : fmt::format("{} fills of {}", first->work_fills, format_size(first->work_bytes));
  out << fmt::format("# pace round ({} iterations of {} and an all-reduce): {}\n", first->iterations, work,
                     stragglers.found.empty() ? std::string("every rank kept pace")
                                              : fmt::format("{} slow rank(s) or node(s)", stragglers.found.size()));
  if (!stragglers.uneven.empty()) out << "#   " << stragglers.uneven << '\n';
  for (const Straggler& s : stragglers.found) out << "#   " << s.message << '\n';
  for (const Straggler& s : stragglers.unconfirmed) out << "#   " << s.message << '\n';
}

std::string price_text(const CostSummary& c, const RunResult& r) {
  return c.price.per_gpu_hour ? fmt::format("{} per {}-hour", money_text(*c.price.per_gpu_hour, c.price.currency),
                                            unit_word(r) == "GPUs" ? "GPU" : "rank")
                              : fmt::format("{} per node-hour", money_text(*c.price.per_node_hour, c.price.currency));
}

std::string run_cost_text(const CostSummary& c, const RunResult& r) {
  if (!c.run_cost) return fmt::format("unknown ({})", c.why_no_run_cost);
  return fmt::format("{} ({:.1f} s on {} {}, {} node{})", money_text(*c.run_cost, c.price.currency),
                     r.duration_s.value_or(0), r.run.ranks, unit_word(r), r.run.nodes, r.run.nodes == 1 ? "" : "s");
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

namespace {

// One file's report: its tables, sections, cost and verdicts.
void print_run(const ReportRun& run, std::ostream& out) {
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
  if (r.pairs) {
    std::vector<Finding> shown = r.findings;
    shown.insert(shown.end(), r.unconfirmed.begin(), r.unconfirmed.end());
    print_pairs(*r.pairs, shown, out);
  }
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
    out << fmt::format("#\n# Cost at {}\n#   this run: {}\n", price_text(c, r), run_cost_text(c, r));
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

// The comparison of several files' groups, its one-line results first.
void print_comparison(const Report& report, std::ostream& out) {
  out << fmt::format("# Comparison of {} groups (runs grouped by --label, else each file alone)\n",
                     report.groups.size());
  for (const GroupHeadline& h : report.headline) out << "# Result: " << h.text << '\n';
  for (const ReportGroup& g : report.groups) {
    out << fmt::format("#   {}: {}, {} run{} on {}:", g.label, g.name, g.runs.size(), g.runs.size() == 1 ? "" : "s",
                       g.cluster);
    for (const std::size_t i : g.runs) out << ' ' << report.runs[i].path;
    out << '\n';
  }
  out << "# busbw GB/s: mean±sd over each group's runs; ratio: the group's busbw / A's, \"~\" within noise\n";
  out << fmt::format("# {:<14} {:>8} {:>5} {:>4} {:>4} {:>10}", "op", "dtype", "redop", "root", "pl", "size");
  for (const ReportGroup& g : report.groups) out << fmt::format(" {:>17}", g.label);
  for (std::size_t g = 1; g < report.groups.size(); ++g) out << fmt::format(" {:>7}", report.groups[g].label + "/A");
  out << '\n';
  bool noisy = false;
  for (const CompareRow& row : report.compare) {
    out << fmt::format("  {:<14} {:>8} {:>5} {:>4} {:>4} {:>10}", name(row.op), name(row.dtype),
                       row.redop ? std::string(name(*row.redop)) : "-", row.root ? std::to_string(*row.root) : "-",
                       row.placement == Placement::in_place ? "ip" : "oop", format_size(row.bytes));
    for (const auto& s : row.busbw) out << fmt::format(" {:>17}", spread_text(s));
    for (std::size_t g = 1; g < row.ratio.size(); ++g) {
      out << fmt::format(" {:>7}", ratio_text(row.ratio[g]));
      noisy = noisy || (row.ratio[g].noise != Noise::none && row.ratio[g].noise != Noise::missing);
    }
    out << '\n';
  }
  if (noisy)
    out << fmt::format(
        "# ~: within noise, no ratio: a side's busbw below {:g}% of the op's peak here, or the difference within "
        "twice the standard error of the groups' run-to-run spread\n",
        noise_floor_fraction * 100);
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
}

}  // namespace

void print_report(const Report& report, std::ostream& out) {
  if (report.runs.size() == 1) {
    print_run(report.runs.front(), out);
    return;
  }
  // Several files: what differs first, then each file as one alone prints it.
  print_comparison(report, out);
  out << "#\n# Each file alone\n";
  for (const ReportRun& run : report.runs) {
    out << "#\n";
    print_run(run, out);
  }
  out << fmt::format("#\n# Overall verdict: {}\n", name(report.level));
}

void write_report_csv(const Report& report, std::ostream& out) {
  if (report.runs.size() == 1) {
    write_csv(report.runs.front().result, out);
    return;
  }
  // Long form: one row per point and group, so a spreadsheet filters and
  // pivots it; each row names its group, the runs' label and files, and the
  // point's whole key.
  out << "group,label,files,op,dtype,redop,root,placement,bytes,runs,busbw_gbs_mean,busbw_gbs_sd,busbw_gbs_min,"
         "busbw_gbs_max,busbw_ratio_to_first,noise\n";
  for (const CompareRow& row : report.compare)
    for (std::size_t g = 0; g < report.groups.size(); ++g) {
      const ReportGroup& group = report.groups[g];
      std::string files;
      for (const std::size_t i : group.runs) files += (files.empty() ? "" : " ") + report.runs[i].path;
      const std::string& label = report.runs[group.runs.front()].result.run.label;
      out << fmt::format("{},{},{},{},{},{},{},{},{}", group.label, csv_text(label), csv_text(files), name(row.op),
                         name(row.dtype), row.redop ? std::string(name(*row.redop)) : "",
                         row.root ? std::to_string(*row.root) : "", name(row.placement), row.bytes);
      if (const std::optional<Spread>& s = row.busbw[g])
        out << fmt::format(",{},{},{},{},{}", s->runs, s->mean, s->sd, s->min, s->max);
      else
        out << ",0,,,,";
      const CompareRatio& r = row.ratio[g];
      out << ',' << (r.value ? fmt::format("{}", *r.value) : "") << ',' << name(r.noise) << '\n';
    }
}

}  // namespace fabricbench
