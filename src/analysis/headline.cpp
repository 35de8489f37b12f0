#include "fabricbench/analysis/headline.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "fabricbench/analysis/pairs.hpp"
#include "fabricbench/core/sizes.hpp"
#include "fabricbench/core/text.hpp"

namespace fabricbench {
namespace {

const Verdict* find_verdict(const ReportRun& run, const std::string& subject) {
  const auto it = std::find_if(run.verdicts.begin(), run.verdicts.end(),
                               [&subject](const Verdict& v) { return v.subject == subject; });
  return it == run.verdicts.end() ? nullptr : &*it;
}

std::optional<double> evidence(const Verdict& v, const std::string& what) {
  for (const Evidence& e : v.evidence)
    if (e.what == what) return e.value;
  return std::nullopt;
}

// Per op in the order first measured: its largest busbw, where, and its
// share of the reference when one judged it.
std::string bandwidth_text(const ReportRun& run) {
  std::vector<Op> order;
  std::map<Op, const SweepRecord*> peak;
  for (const SweepRecord& r : run.result.records) {
    if (!r.timing) continue;
    if (!peak.contains(r.op)) order.push_back(r.op);
    const SweepRecord*& best = peak[r.op];
    if (best == nullptr || r.timing->busbw_gbs > best->timing->busbw_gbs) best = &r;
  }
  if (order.empty()) return "not measured: this run has no sweep (fabricbench run or sweep measures it)";
  std::vector<std::string> parts;
  for (const Op op : order) {
    const SweepRecord& r = *peak[op];
    std::string part = fmt::format("{} peak {} at {}", name(op), gbs_text(r.timing->busbw_gbs), format_size(r.bytes));
    const Verdict* ref = find_verdict(run, fmt::format("{}.busbw", name(op)));
    if (ref != nullptr && ref->level != Level::info)
      if (const auto share = evidence(*ref, "share of expected"))
        part += fmt::format(" ({:.0f}% of the reference: {})", *share, name(ref->level));
    parts.push_back(std::move(part));
  }
  std::string text = fmt::format("{}", fmt::join(parts, "; "));
  const Verdict* ref = find_verdict(run, "allreduce.busbw");
  if (ref == nullptr) ref = find_verdict(run, "expectations");
  if (ref != nullptr && ref->level == Level::info) text += "; no reference judged it (see its verdict below)";
  return text;
}

std::string scaling_text(const ReportRun& run) {
  const RunResult& r = run.result;
  if (r.run.nodes < 2) return "one node: nothing to scale (run on 2 or more nodes for the ladder)";
  if (!r.scaling) return "not measured: the scaling ladder did not run (fabricbench run or scale on the nodes)";
  std::vector<std::string> parts;
  for (const Verdict& v : run.verdicts) {
    if (v.kind != VerdictKind::ladder || !v.subject.starts_with("scaling ")) continue;
    const std::string op = v.subject.substr(8);
    const auto from_two = evidence(v, "scaling efficiency from 2 nodes");
    const auto one = evidence(v, "busbw at 1 node");
    // The largest node count's figure: the last evidence of that form.
    std::optional<double> top;
    int n = 0;
    for (const Evidence& e : v.evidence)
      if (e.what.starts_with("busbw at ") && e.what != "busbw at 1 node" &&
          (!from_two || e.what != "busbw at 2 nodes")) {
        top = e.value;
        n = std::atoi(e.what.c_str() + 9);
      }
    if (!top) continue;
    const std::string of_one =
        one && *one > 0 ? fmt::format("{:.0f}% of one node's busbw", 100.0 * *top / *one) : std::string();
    if (from_two)
      parts.push_back(fmt::format("{} at {} nodes keeps {:.0f}% of 2 nodes' busbw: {}{}", op, n, *from_two,
                                  name(v.level), of_one.empty() ? "" : " (" + of_one + ")"));
    else
      parts.push_back(fmt::format("{} at {} nodes: {} (not judged: a ladder to 3 or more nodes judges the trend)", op,
                                  n, of_one.empty() ? gbs_text(*top) : of_one));
  }
  if (parts.empty()) return "not judged: the ladder has no level of several nodes";
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string bad_nodes_text(const ReportRun& run) {
  std::vector<std::string> named;
  for (const Verdict& v : run.verdicts)
    if (v.kind == VerdictKind::finding && v.level >= Level::warn &&
        (v.cause_kind == "slow_node" || v.cause_kind == "slow_link" || v.cause_kind == "slow_nic" ||
         v.cause_kind == "slow_uplink"))
      named.push_back(fmt::format("{} ({})", v.subject,
                                  v.cause_kind == "slow_node"     ? "slow node"
                                  : v.cause_kind == "slow_nic"    ? "slow NIC"
                                  : v.cause_kind == "slow_uplink" ? "slow uplink"
                                                                  : "slow link"));
  if (!named.empty()) return fmt::format("{}", fmt::join(named, ", "));
  const RunResult& r = run.result;
  if (r.run.nodes < 2) return "one node: no node pair to compare";
  if (!r.pairs) return "not measured: the node-pair matrix did not run (fabricbench run or p2p on the nodes)";
  const std::size_t n = r.pairs->hosts.size();
  if (n == 2) return std::string(two_nodes_text);
  // A pair with no bandwidth figure is not cleared: say which, and what
  // measures them.
  std::size_t measured = 0;
  std::vector<std::string> without;
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b) {
      if (static_cast<int>(b) < r.pairs->nodes.size && r.pairs->nodes.bw(static_cast<int>(a), static_cast<int>(b)))
        ++measured;
      else
        without.push_back(fmt::format("{}-{}", r.pairs->hosts[a], r.pairs->hosts[b]));
    }
  if (measured == 0)
    return "not judged: no node pair's bandwidth was measured (a longer --budget, or none, measures them)";
  std::string text =
      without.empty() || r.pairs->mode != "full"
          ? fmt::format("none: every node and link of the {} node pairs measured stands with the others", measured)
          : fmt::format(
                "none among the {} node pairs measured; {} of {} have no bandwidth figure ({}{}), so a slow "
                "node or link there is not ruled out: a longer --budget (or none) measures them",
                measured, without.size(), n * (n - 1) / 2,
                fmt::join(without.begin(), without.begin() + std::min<std::ptrdiff_t>(4, std::ssize(without)), ", "),
                without.size() > 4 ? ", ..." : "");
  if (!r.unconfirmed.empty())
    text += fmt::format(" ({} suspect{} of the first pass not confirmed by the second)", r.unconfirmed.size(),
                        r.unconfirmed.size() == 1 ? "" : "s");
  return text;
}

std::string cost_text(const ReportRun& run) {
  if (!run.cost) return "no price given (--price-per-gpu-hour or --price-per-node-hour, --currency)";
  const CostSummary& c = *run.cost;
  const std::string& cur = c.price.currency;
  std::vector<std::string> parts;
  parts.push_back(c.run_cost ? fmt::format("this run {}", money_text(*c.run_cost, cur))
                             : fmt::format("this run unknown ({})", c.why_no_run_cost));
  if (!c.training.empty()) {
    const CostPoint& last = c.training.back();
    parts.push_back(fmt::format("data-parallel training {} per 1000 steps on {} nodes",
                                money_text(last.per_1000_steps, cur), last.nodes));
  }
  if (c.model_parallel)
    parts.push_back(
        fmt::format("model-parallel training {} per 1000 steps", money_text(c.model_parallel->per_1000_steps, cur)));
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string missing_text(const ReportRun& run) {
  const RunResult& r = run.result;
  std::vector<std::string> parts;
  if (!r.complete)
    parts.push_back(r.end_reason.empty() ? "the run did not finish" : "the run did not finish: " + r.end_reason);
  if (r.budget && !r.budget->cuts.empty()) {
    const std::vector<Cut>& cuts = r.budget->cuts;
    std::size_t skipped = 0;
    std::size_t smaller = 0;
    for (const Cut& c : cuts) {
      skipped += c.action == "skipped" ? 1 : 0;
      smaller += c.action == "smaller messages" ? 1 : 0;
    }
    std::vector<std::string> whats;
    for (std::size_t i = 0; i < cuts.size() && i < 3; ++i)
      whats.push_back(fmt::format("{} {} ({})", name(cuts[i].phase), cuts[i].what, cuts[i].action));
    const std::string with_smaller = smaller > 0 ? fmt::format(", {} with smaller messages", smaller) : "";
    parts.push_back(fmt::format(
        "--budget {:g} s cut {} step{} ({} skipped, {} with fewer iterations{}): {}{}; a "
        "longer --budget (or none) measures them",
        r.budget->seconds, cuts.size(), cuts.size() == 1 ? "" : "s", skipped, cuts.size() - skipped - smaller,
        with_smaller, fmt::join(whats, ", "), cuts.size() > 3 ? ", ..." : ""));
  }
  // The bisection is no part of a budget's shares: on 4 or more nodes a
  // budgeted run with a pair matrix (run, p2p) goes without it.
  if (r.budget && r.run.nodes >= 4 && r.pairs && !r.bisection)
    parts.push_back("the bisection test, which runs only without a budget (fabricbench p2p, or --budget none)");
  if (r.run.ranks == 1) parts.push_back("everything across links: the run had 1 rank");
  if (!r.checked) parts.push_back("the data check (--no-check)");
  if (parts.empty()) return "nothing: every planned point was measured";
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

std::string gbs_text(double gbs) {
  if (gbs >= 100) return fmt::format("{:.0f} GB/s", gbs);
  if (gbs >= 1) return fmt::format("{:.1f} GB/s", gbs);
  return fmt::format("{:.3f} GB/s", gbs);
}

std::vector<HeadlineLine> headline(const ReportRun& run) {
  return {{"bandwidth", bandwidth_text(run)},
          {"scaling", scaling_text(run)},
          {"bad nodes", bad_nodes_text(run)},
          {"cost", cost_text(run)},
          {"not measured", missing_text(run)}};
}

}  // namespace fabricbench
