#include <map>
#include <ostream>
#include <string>

#include <fmt/format.h>

#include "fabricbench/output/writers.hpp"

namespace fabricbench {
namespace {

std::string placement_cells(const SweepRecord* r) {
  if (r == nullptr) return fmt::format(" {:>9} {:>9} {:>9} {:>7} {:>7} {:>6}", "-", "-", "-", "-", "-", "-");
  if (!r->timing) return fmt::format(" {:>9} {:>9} {:>9} {:>7} {:>7} {:>6}", "skip", "-", "-", "-", "-", "-");
  const Timing& t = *r->timing;
  return fmt::format(" {:>9.2f} {:>9.2f} {:>9.2f} {:>7.2f} {:>7.2f} {:>6}", t.time_us, t.p50_us, t.p99_us, t.algbw_gbs,
                     t.busbw_gbs, t.wrong ? std::to_string(*t.wrong) : "N/A");
}

}  // namespace

void TableWriter::point(std::span<const SweepRecord> placements) {
  if (placements.empty()) return;
  const SweepRecord& first = placements.front();
  const std::string header = fmt::format("{} {}", name(first.op), first.ranks);
  if (header != current_header_) {
    current_header_ = header;
    *out_ << fmt::format("#\n# {} on {} ranks\n", name(first.op), first.ranks);
    *out_ << fmt::format("#{:46}{:^54}{:^54}\n", "", "out-of-place", "in-place");
    *out_ << fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>5}", "size", "count", "type", "redop", "root");
    for (int i = 0; i < 2; ++i)
      *out_ << fmt::format(" {:>9} {:>9} {:>9} {:>7} {:>7} {:>6}", "time", "p50", "p99", "algbw", "busbw", "#wrong");
    *out_ << '\n';
    *out_ << fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>5}", "(B)", "(elements)", "", "", "");
    for (int i = 0; i < 2; ++i)
      *out_ << fmt::format(" {:>9} {:>9} {:>9} {:>7} {:>7} {:>6}", "(us)", "(us)", "(us)", "(GB/s)", "(GB/s)", "");
    *out_ << '\n';
  }
  const SweepRecord* out_of_place = nullptr;
  const SweepRecord* in_place = nullptr;
  for (const SweepRecord& r : placements) (r.placement == Placement::in_place ? in_place : out_of_place) = &r;
  *out_ << fmt::format("  {:>10} {:>12} {:>8} {:>6} {:>5}", first.bytes, first.count, name(first.dtype),
                       first.redop ? name(*first.redop) : "none", first.root ? std::to_string(*first.root) : "-");
  *out_ << placement_cells(out_of_place) << placement_cells(in_place);
  if (!first.timing && !first.skipped.empty()) *out_ << "  # skipped: " << first.skipped;
  *out_ << '\n' << std::flush;
}

void TableWriter::summary(const RunResult& result) {
  std::map<std::string, std::pair<double, int>> by_op;
  for (const SweepRecord& r : result.records) {
    if (!r.timing) continue;
    auto& [sum, n] = by_op[std::string(name(r.op))];
    sum += r.timing->busbw_gbs;
    ++n;
  }
  *out_ << "#\n";
  for (const auto& [op, acc] : by_op)
    *out_ << fmt::format("# {:<14} avg bus bandwidth : {:.3f} GB/s\n", op, acc.first / acc.second);
  if (result.checked)
    *out_ << fmt::format("# Out of bounds values : {} {}\n", result.wrong_total, data_ok(result) ? "OK" : "FAILED");
  else
    *out_ << "# Out of bounds values : not checked (--no-check)\n";
  *out_ << "#\n" << std::flush;
}

}  // namespace fabricbench
