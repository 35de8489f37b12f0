// The terminal table, in nccl-tests' column order (a root of -1 where there
// is none, as nccl-tests prints it); fabricbench's own columns come after, so
// a parser counting fields from the end of a row wants --format nccl-tests.

#include <algorithm>
#include <map>
#include <ostream>
#include <string>

#include <fmt/format.h>

#include "fabricbench/core/sizes.hpp"
#include "fabricbench/output/printer.hpp"

namespace fabricbench {
namespace {

constexpr int kind_width = 46;   // "# size count type redop root" before the placements
constexpr int nccl_width = 38;   // time algbw busbw #wrong
constexpr int extra_width = 28;  // p50 p99 iters

std::string nccl_cells(const SweepRecord* r) {
  if (r == nullptr) return fmt::format(" {:>9} {:>8} {:>8} {:>6}", "-", "-", "-", "-");
  if (!r->timing) return fmt::format(" {:>9} {:>8} {:>8} {:>6}", "skip", "-", "-", "-");
  const Timing& t = *r->timing;
  return fmt::format(" {:>9.2f} {:>8.2f} {:>8.2f} {:>6}", t.time_us, t.algbw_gbs, t.busbw_gbs,
                     t.wrong ? std::to_string(*t.wrong) : "N/A");
}

std::string extra_cells(const SweepRecord* r) {
  if (r == nullptr || !r->timing) return fmt::format(" {:>9} {:>9}  {:>6}", "-", "-", "-");
  const Timing& t = *r->timing;
  // '*': the percentiles come from a second batch (see the footnote).
  return fmt::format(" {:>9.2f} {:>9.2f}{} {:>6}", t.p50_us, t.p99_us, t.distribution_from_second_batch ? "*" : " ",
                     t.iterations);
}

// NCCL's choice at the out-of-place point ("RING/SIMPLE"), with the
// in-place one after a '|' where it differs.
std::string algorithm_cell(const SweepRecord* out_of_place, const SweepRecord* in_place) {
  const auto text = [](const SweepRecord* r) -> std::string {
    if (r == nullptr || !r->choice || !r->choice->algorithm) return "-";
    return *r->choice->algorithm + (r->choice->protocol ? "/" + *r->choice->protocol : "");
  };
  const std::string first = text(out_of_place != nullptr ? out_of_place : in_place);
  const std::string second = in_place != nullptr && out_of_place != nullptr ? text(in_place) : first;
  return fmt::format(" {:>16}", second == first ? first : first + "|" + second);
}

// What each NIC carried (out-of-place): ">=" marks the lower bound.
std::string wire_cell(const SweepRecord* r) {
  if (r == nullptr || !r->nic_wire) return fmt::format(" {:>9}", "-");
  if (!r->nic_wire->gbs) return fmt::format(" {:>9}", r->nic_wire->basis);
  return fmt::format(" {:>9}",
                     fmt::format("{}{:.2f}", r->nic_wire->basis == "lower_bound" ? ">=" : "", *r->nic_wire->gbs));
}

std::string iterations_text(const IterationPolicy& p) {
  if (p.fixed_iters > 0) return fmt::format("fixed, {} per size", p.fixed_iters);
  return fmt::format("adaptive, {:g} ms per size and placement, {} to {}", p.min_time_ms, p.min_iters, p.max_iters);
}

}  // namespace

void TablePrinter::context(const RunConfig& config, const RunInfo& run) {
  const bool gpus = run.transport != "mpi";
  *out_ << fmt::format("# Settings: warm-up {} iteration{}; iterations {}; check {}; graph {}; time: mean over ranks\n",
                       config.iterations.warmup, config.iterations.warmup == 1 ? "" : "s",
                       iterations_text(config.iterations), config.check ? "on" : "off (--no-check)",
                       gpus && config.gpu.graph ? "on" : "off");
  if (gpus && !run.devices.empty()) {
    *out_ << "# Using devices\n";
    for (const std::string& d : run.devices) *out_ << "#   " << d << '\n';
  } else {
    *out_ << "# Ranks (host memory, no GPU)\n";
    for (std::size_t n = 0; n < run.hostnames.size(); ++n) {
      const int k = n < run.ranks_per_node.size() ? run.ranks_per_node[n] : 0;
      *out_ << fmt::format("#   {}: {} rank{}\n", run.hostnames[n], k, k == 1 ? "" : "s");
    }
  }
  algorithm_column_ = gpus;
  wire_column_ = run.nodes > 1;
  if (!gpus) *out_ << "# Algorithm: the MPI library's own choice, not visible to fabricbench\n";
  *out_ << std::flush;
}

std::string retaken_line(const SweepRecord& again) {
  const int first = again.first_iterations.value_or(0);
  std::string line = fmt::format("# measured again with the time the sweep had left: {} {} {} {}: ", name(again.op),
                                 name(again.dtype), format_size(again.bytes), name(again.placement));
  if (!again.timing) return line + "skipped again\n";
  const Timing& t = *again.timing;
  line +=
      fmt::format("{} iterations{} ({}), {:.2f} us, busbw {:.2f} GB/s\n", t.iterations,
                  again.cut.empty() ? "" : ", still fewer than --min-iters",
                  first > 0 ? fmt::format("the table's row has the first measurement's {}, cut by the budget", first)
                            : std::string("the table's row: skipped by the budget"),
                  t.time_us, t.busbw_gbs);
  return line;
}

void TablePrinter::retaken(const SweepRecord& again) { *out_ << retaken_line(again) << std::flush; }

void TablePrinter::point(std::span<const SweepRecord> placements) {
  if (placements.empty()) return;
  const SweepRecord& first = placements.front();
  const std::string header = fmt::format("{} {}", name(first.op), first.ranks);
  if (header != current_header_) {
    current_header_ = header;
    *out_ << fmt::format("#\n# {} on {} ranks\n", name(first.op), first.ranks);
    const std::string groups =
        fmt::format("#{:{}}{:^{}}{:^{}}{:^{}}{:^{}}", "", kind_width - 1, "out-of-place", nccl_width, "in-place",
                    nccl_width, "out-of-place", extra_width, "in-place", extra_width);
    *out_ << groups.substr(0, groups.find_last_not_of(' ') + 1) << '\n';
    *out_ << fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>5}", "size", "count", "type", "redop", "root");
    for (int i = 0; i < 2; ++i) *out_ << fmt::format(" {:>9} {:>8} {:>8} {:>6}", "time", "algbw", "busbw", "#wrong");
    for (int i = 0; i < 2; ++i) *out_ << fmt::format(" {:>9} {:>9}  {:>6}", "p50", "p99", "iters");
    if (algorithm_column_) *out_ << fmt::format(" {:>16}", "algo/proto");
    if (wire_column_) *out_ << fmt::format(" {:>9}", "NIC wire");
    *out_ << '\n';
    std::string units = fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>5}", "(B)", "(elements)", "", "", "");
    for (int i = 0; i < 2; ++i) units += fmt::format(" {:>9} {:>8} {:>8} {:>6}", "(us)", "(GB/s)", "(GB/s)", "");
    for (int i = 0; i < 2; ++i) units += fmt::format(" {:>9} {:>9}  {:>6}", "(us)", "(us)", "");
    if (algorithm_column_) units += fmt::format(" {:>16}", "(NCCL)");
    if (wire_column_) units += fmt::format(" {:>9}", "(GB/s)");
    *out_ << units.substr(0, units.find_last_not_of(' ') + 1) << '\n';
  }
  const SweepRecord* out_of_place = nullptr;
  const SweepRecord* in_place = nullptr;
  for (const SweepRecord& r : placements) {
    (r.placement == Placement::in_place ? in_place : out_of_place) = &r;
    if (r.timing && r.timing->distribution_from_second_batch) second_batch_seen_ = true;
  }
  *out_ << fmt::format("  {:>10} {:>12} {:>8} {:>6} {:>5}", first.bytes, first.count, name(first.dtype),
                       first.redop ? name(*first.redop) : "none", first.root ? *first.root : -1);
  *out_ << nccl_cells(out_of_place) << nccl_cells(in_place) << extra_cells(out_of_place) << extra_cells(in_place);
  if (algorithm_column_) *out_ << algorithm_cell(out_of_place, in_place);
  if (wire_column_) *out_ << wire_cell(out_of_place != nullptr ? out_of_place : in_place);
  if (!first.timing && !first.skipped.empty()) *out_ << "  # skipped: " << first.skipped;
  *out_ << '\n' << std::flush;
}

void TablePrinter::columns_for(const RunResult& result) {
  algorithm_column_ = false;
  wire_column_ = false;
  for (const SweepRecord& r : result.records) {
    algorithm_column_ = algorithm_column_ || (r.choice && result.run.transport != "mpi");
    wire_column_ = wire_column_ || r.nic_wire.has_value();
  }
}

void TablePrinter::finalize(const Report& report) {
  if (!report.runs.empty() && !report.runs.front().result.records.empty()) summary(report.runs.front().result);
}

void TablePrinter::summary(const RunResult& result) {
  std::map<std::string, std::pair<double, int>> by_op;
  double sum = 0;
  int n = 0;
  for (const SweepRecord& r : result.records) {
    if (!r.timing) continue;
    auto& [op_sum, op_n] = by_op[std::string(name(r.op))];
    op_sum += r.timing->busbw_gbs;
    ++op_n;
    sum += r.timing->busbw_gbs;
    ++n;
  }
  int missed = 0;
  int judged = 0;
  double widest = 0;
  for (const SweepRecord& r : result.records) {
    if (!r.timing || !r.timing->precision_met) continue;
    ++judged;
    if (*r.timing->precision_met) continue;
    ++missed;
    widest = std::max(widest, r.timing->precision.value_or(0.0));
  }
  *out_ << "#\n";
  if (second_batch_seen_)
    *out_ << "# * p50/p99 from a second batch of the same length: at small sizes a stamp per iteration would show "
             "in the time\n";
  if (missed > 0)
    *out_ << fmt::format(
        "# precision: {} of {} points missed --precision (widest half-width {:.1f}%; each is precision_met false in "
        "the JSON): the machine was noisy, or --max-time-ms was too short; rerun on an idle machine or raise "
        "--max-time-ms\n",
        missed, judged, widest * 100);
  for (const auto& [op, acc] : by_op)
    *out_ << fmt::format("# {:<14} avg bus bandwidth : {:.3f} GB/s\n", op, acc.first / acc.second);
  if (result.checked)
    *out_ << fmt::format("# Out of bounds values : {} {}\n", result.wrong_total, data_ok(result) ? "OK" : "FAILED");
  else
    *out_ << "# Out of bounds values : not checked (--no-check)\n";
  // nccl-tests' closing line: the mean busbw over every timed point and placement.
  *out_ << fmt::format("# Avg bus bandwidth    : {:.6g} \n", n > 0 ? sum / n : 0.0);
  *out_ << "#\n" << std::flush;
}

}  // namespace fabricbench
