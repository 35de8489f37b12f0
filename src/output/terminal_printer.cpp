// A measuring run's terminal printers: the full sections, the lines --quiet
// keeps, the progress line and the data check's failure.

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>

#include <fmt/format.h>

#include "fabricbench/core/sizes.hpp"
#include "fabricbench/output/printer.hpp"
#include "fabricbench/output/sections.hpp"
#include "fabricbench/output/topology_summary.hpp"

namespace fabricbench {
namespace {

// Printed with or without --quiet: it changes how long the rest of the run lasts.
void write_budget_halved(double left_s, std::ostream& out) {
  out << fmt::format(
      "# budget: a host is named; the rest of the run keeps half of the {:.1f} s left "
      "(--on-finding halve)\n",
      left_s);
}

}  // namespace

void TerminalPrinter::header(const ToolInfo& tool, const RunInfo& run) {
  *out_ << fmt::format("# fabricbench {} (git {}) transport {}: {} rank{} on {} node{}\n", tool.version, tool.git,
                       run.transport, run.ranks, run.ranks == 1 ? "" : "s", run.nodes, run.nodes == 1 ? "" : "s");
  for (std::size_t n = 0; n < run.hostnames.size(); ++n) {
    const int ranks = n < run.ranks_per_node.size() ? run.ranks_per_node[n] : 0;
    *out_ << fmt::format("#   node {} {}: {} rank{}\n", n, run.hostnames[n], ranks, ranks == 1 ? "" : "s");
  }
}

void TerminalPrinter::topology(const ClusterTopology& topology) { write_topology_summary(topology, *out_); }

void TerminalPrinter::health(const HealthResult& health) { print_health(health, *out_); }

void TerminalPrinter::stragglers(const StragglersResult& stragglers) { print_stragglers(stragglers, *out_); }

void TerminalPrinter::budget_halved(double left_s) { write_budget_halved(left_s, *out_); }

void TerminalPrinter::cut(const Cut& cut) {
  *out_ << fmt::format("# cut ({}): {}: {} {}\n", cut.reason, name(cut.phase), cut.what, cut.action);
}

void TerminalPrinter::ladder(const ScaleResult& scaling) { print_ladder(scaling, *out_); }

void TerminalPrinter::gpu_ladder(const GpuLadderResult& ladder) { print_gpu_ladder(ladder, *out_); }

void TerminalPrinter::p2p_header(const P2PSweepResult& shape, std::span<const P2PTest> tests) {
  print_p2p_sweep_header(shape, tests, *out_);
}

void TerminalPrinter::p2p_row(std::span<const P2PRecord> records) { print_p2p_sweep_row(records, *out_); }

void TerminalPrinter::pairs(const PairsResult& pairs, const std::vector<Finding>& findings) {
  print_pairs(pairs, findings, *out_);
}

void TerminalPrinter::islands(const IslandsResult& islands) { print_islands(islands, *out_); }

void TerminalPrinter::nccl_usage(const NcclUsage& usage) { print_nccl_usage(usage, *out_); }

void TerminalPrinter::model_parallel(const ModelParallelResult& projection) { print_model_parallel(projection, *out_); }

void TerminalPrinter::bisection(const BisectionResult& bisection) { print_bisection(bisection, *out_); }

void TerminalPrinter::storage(const StorageResult& storage) { print_storage(storage, *out_); }

void TerminalPrinter::budget(const BudgetRecord& budget, std::optional<double> duration_s) {
  print_budget(budget, duration_s, *out_);
}

// The health pass's verdict is its own short answer, so --quiet keeps it whole.
void QuietPrinter::health(const HealthResult& health) { print_health(health, *out_); }

void QuietPrinter::stragglers(const StragglersResult& stragglers) { print_stragglers(stragglers, *out_); }

void QuietPrinter::budget_halved(double left_s) { write_budget_halved(left_s, *out_); }

void QuietPrinter::pairs(const PairsResult& /*pairs*/, const std::vector<Finding>& findings) {
  for (const Finding& f : findings) *out_ << "# " << f.message << '\n';
}

// One island is no finding.
void QuietPrinter::islands(const IslandsResult& islands) {
  if (islands.islands.size() > 1) *out_ << "# " << islands.message << '\n';
}

void QuietPrinter::bisection(const BisectionResult& bisection) {
  *out_ << "# bisection: " << bisection.message << '\n';
}

void QuietPrinter::storage(const StorageResult& storage) { *out_ << "# storage: " << storage.message << '\n'; }

// The clock starts with the sweep, so a short sweep shows no progress line
// however long the phases before it took.
void ProgressPrinter::context(const RunConfig& /*config*/, const RunInfo& /*run*/) {
  start_ = std::chrono::steady_clock::now();
}

void ProgressPrinter::progress(const SweepRecord& next, std::size_t done, std::size_t total) {
  if (std::chrono::steady_clock::now() - start_ < std::chrono::seconds(2)) return;
  *status_ << fmt::format("\r\033[K[{}/{}] {} {} {}", done + 1, total, name(next.op), name(next.dtype),
                          format_size(next.bytes))
           << std::flush;
  shown_ = true;
}

void ProgressPrinter::point(std::span<const SweepRecord> /*placements*/) { clear(); }

void ProgressPrinter::clear() {
  if (!shown_) return;
  // Erased before the row: on one terminal the row then starts a clean line.
  *status_ << "\r\033[K" << std::flush;
  shown_ = false;
}

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds)) return "unbounded";
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return s % 60 == 0 ? fmt::format("{} min", s / 60) : fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, (s % 3600) / 60);
}

void PhasePrinter::phase(const PhaseNotice& n) {
  std::string bound;
  if (!n.budget_s)
    bound = "no --budget: as long as it takes";
  else if (std::isfinite(n.share_s))
    bound =
        fmt::format("at most {} (its share of the {} --budget)", duration_text(n.share_s), duration_text(*n.budget_s));
  else
    bound = fmt::format("outside the {} --budget's shares", duration_text(*n.budget_s));
  *status_ << fmt::format("fabricbench: [{}/{}] {}: {}; {}; {} so far\n", n.index, n.total, n.name, n.what, bound,
                          duration_text(n.elapsed_s))
           << std::flush;
}

void PhasePrinter::budget(const BudgetRecord& budget, std::optional<double> duration_s) {
  if (!duration_s) return;
  *status_ << fmt::format("fabricbench: done in {} (--budget {}; {} cut)\n", duration_text(*duration_s),
                          duration_text(budget.seconds), budget.cuts.size())
           << std::flush;
}

void DataCheckPrinter::finalize(const Report& report) {
  if (report.runs.empty()) return;
  const RunResult& result = report.runs.front().result;
  if (!data_ok(result))
    *errors_ << fmt::format("fabricbench: {} wrong elements: the data check failed\n", result.wrong_total);
}

}  // namespace fabricbench
