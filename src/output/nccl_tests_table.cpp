// `--format nccl-tests`: the widths, value formats and `#` lines of
// nccl-tests' own output (its src/util.cu: writeDeviceReport,
// writeResultHeader, writeBenchmarkLine*, writeResultFooter), so parsers
// written for it read fabricbench's stdout: busbw at a fixed place from the
// end of a row, `grep "# Avg bus bandwidth"`, a regex of the 13 columns.

#include <array>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "fabricbench/output/printer.hpp"

namespace fabricbench {
namespace {

constexpr std::array<std::pair<Op, std::string_view>, 7> binaries{{
    {Op::allreduce, "all_reduce_perf"},
    {Op::allgather, "all_gather_perf"},
    {Op::reducescatter, "reduce_scatter_perf"},
    {Op::broadcast, "broadcast_perf"},
    {Op::reduce, "reduce_perf"},
    {Op::alltoall, "alltoall_perf"},
    {Op::sendrecv, "sendrecv_perf"},
}};

// A number in exactly `width` characters, as nccl-tests fits its floats: two
// decimals, then one, then none, then an exponent.
std::string fitted(double value, int width) {
  for (const int decimals : {2, 1, 0}) {
    std::string text = fmt::format("{:>{}.{}f}", value, width, decimals);
    if (static_cast<int>(text.size()) <= width) return text;
  }
  return fmt::format("{:>{}.{}e}", value, width, width >= 7 ? 1 : 0);
}

std::string cells(const SweepRecord* r) {
  // nccl-tests measures both placements of every size; a placement left out
  // here (--inplace only|no) has no figures, and its cells say so.
  if (r == nullptr || !r->timing) return fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", "-", "-", "-", "-");
  const Timing& t = *r->timing;
  const std::string wrong = t.wrong ? fmt::format("{:>6g}", static_cast<double>(*t.wrong)) : "   N/A";
  return fmt::format("  {}  {}  {}  {}", fitted(t.time_us, 7), fitted(t.algbw_gbs, 6), fitted(t.busbw_gbs, 6), wrong);
}

}  // namespace

std::string_view nccl_tests_binary(Op op) {
  for (const auto& [o, binary] : binaries)
    if (o == op) return binary;
  return name(op);
}

std::optional<Op> op_of_nccl_tests_binary(std::string_view binary) {
  for (const auto& [op, b] : binaries)
    if (b == binary) return op;
  return std::nullopt;
}

std::vector<std::pair<Op, double>> busbw_means_by_op(std::span<const SweepRecord> records) {
  std::vector<std::pair<Op, std::pair<double, int>>> sums;
  for (const SweepRecord& r : records) {
    if (!r.timing) continue;
    auto it = sums.begin();
    while (it != sums.end() && it->first != r.op) ++it;
    if (it == sums.end()) it = sums.insert(sums.end(), {r.op, {0.0, 0}});
    it->second.first += r.timing->busbw_gbs;
    ++it->second.second;
  }
  std::vector<std::pair<Op, double>> means;
  means.reserve(sums.size());
  for (const auto& [op, acc] : sums) means.emplace_back(op, acc.first / acc.second);
  return means;
}

void NcclTestsPrinter::context(const RunConfig& config, const RunInfo& run) {
  min_bw_gbs_ = config.min_bw_gbs;
  checked_ = config.check;
  const bool gpus = run.transport != "mpi";
  // One GPU per process, or --gpus N driven by a thread each.
  const int threads = gpus && config.gpu.gpus > 0 ? config.gpu.gpus : 1;
  const std::size_t min_bytes = config.sizes.empty() ? 0 : config.sizes.front();
  const std::size_t max_bytes = config.sizes.empty() ? 0 : config.sizes.back();
  std::string line = fmt::format("# nThread {} nGpus 1 minBytes {} maxBytes {}", threads, min_bytes, max_bytes);
  // The step only when the sizes are a geometric ladder (factor 0: a --sizes
  // list) of a whole factor, as nccl-tests' -f takes.
  const double factor = config.size_range.factor;
  if (factor > 1 && factor == std::floor(factor)) line += fmt::format(" step: {:g}(factor)", factor);
  line += fmt::format(" warmup iters: {}", config.iterations.warmup);
  // Adaptive iterations have no single count: the field is left out.
  if (config.iterations.fixed_iters > 0) line += fmt::format(" iters: {}", config.iterations.fixed_iters);
  line += fmt::format(" agg iters: 1 validation: {} graph: {}", config.check ? 1 : 0, gpus && config.gpu.graph ? 1 : 0);
  *out_ << line << "\n#\n";
  if (gpus && !run.devices.empty()) {
    *out_ << "# Using devices\n";
    for (const std::string& d : run.devices) {
      // "rank N: <device>", as the GPU session gathers them.
      const std::size_t colon = d.find(": ");
      const std::string rank = d.rfind("rank ", 0) == 0 && colon != std::string::npos ? d.substr(5, colon - 5) : "";
      if (rank.empty())
        *out_ << "#  " << d << '\n';
      else
        *out_ << fmt::format("#  Rank {:>2} {}\n", rank, d.substr(colon + 2));
    }
  } else {
    *out_ << "# Using host memory (MPI transport, no GPU)\n";
  }
  *out_ << std::flush;
}

void NcclTestsPrinter::retaken(const SweepRecord& again) { *out_ << retaken_line(again) << std::flush; }

void NcclTestsPrinter::point(std::span<const SweepRecord> placements) {
  if (placements.empty()) return;
  const SweepRecord& first = placements.front();
  if (op_ != first.op) {
    close_op();
    op_ = first.op;
    const std::string_view binary = nccl_tests_binary(first.op);
    *out_ << "#\n# Collective test starting: " << binary << '\n';
    *out_ << "#\n";
    *out_ << fmt::format(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place          \n", "",
        "", "", "", "");
    *out_ << fmt::format(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} \n", "size",
        "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    *out_ << fmt::format(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} \n", "(B)",
        "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  }
  const SweepRecord* out_of_place = nullptr;
  const SweepRecord* in_place = nullptr;
  for (const SweepRecord& r : placements) {
    (r.placement == Placement::in_place ? in_place : out_of_place) = &r;
    if (!r.timing) continue;
    busbw_sum_ += r.timing->busbw_gbs;
    ++busbw_n_;
    if (r.timing->wrong) wrong_ += *r.timing->wrong;
  }
  const bool timed = (out_of_place != nullptr && out_of_place->timing) || (in_place != nullptr && in_place->timing);
  if (!timed) {
    // nccl-tests never skips a size, so it has no row for one: a comment line
    // keeps the rows all numbers.
    *out_ << fmt::format("# skipped {} B {}: {}\n", first.bytes, name(first.dtype),
                         first.skipped.empty() ? std::string("not measured") : first.skipped);
    *out_ << std::flush;
    return;
  }
  *out_ << fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", first.bytes, first.count, name(first.dtype),
                       first.redop ? name(*first.redop) : "none", first.root ? *first.root : -1);
  *out_ << cells(out_of_place) << cells(in_place) << '\n' << std::flush;
}

void NcclTestsPrinter::close_op() {
  if (!op_) return;
  if (checked_)
    *out_ << fmt::format("# {:<20} : {} {}\n", "Out of bounds values", wrong_, wrong_ == 0 ? "OK" : "FAILED");
  else
    *out_ << fmt::format("# {:<20} : not checked (--no-check)\n", "Out of bounds values");
  if (busbw_n_ == 0) {
    // Every size of the op was skipped: no mean to give, and no verdict.
    *out_ << fmt::format("# {:<20} : N/A (no size measured)\n", "Avg bus bandwidth");
  } else {
    const double avg = busbw_sum_ / busbw_n_;
    // nccl-tests' verdict: FAILED below 90% of NCCL_TESTS_MIN_BW, nothing
    // after the number when it is not set.
    const std::string verdict = !min_bw_gbs_ ? "" : (avg < *min_bw_gbs_ * 0.9 ? "FAILED" : "OK");
    *out_ << fmt::format("# {:<20} : {:g} {}\n", "Avg bus bandwidth", avg, verdict);
  }
  *out_ << "#\n# Collective test concluded: " << nccl_tests_binary(*op_) << '\n' << std::flush;
  op_.reset();
  busbw_sum_ = 0;
  busbw_n_ = 0;
  wrong_ = 0;
}

void NcclTestsPrinter::finalize(const Report& /*report*/) {
  close_op();
  *out_ << std::flush;
}

}  // namespace fabricbench
