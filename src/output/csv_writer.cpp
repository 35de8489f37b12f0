#include <ostream>
#include <string>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "fabricbench/core/text_safety.hpp"
#include "fabricbench/output/writers.hpp"

namespace fabricbench {
namespace {

// RFC 4180 quoting where needed, formulas and control characters defused.
std::string cell(const std::string& text) { return csv_safe_cell(text); }

}  // namespace

void write_csv(std::span<const SweepRecord> records, std::ostream& out) {
  out << "op,dtype,redop,root,placement,size_bytes,count_elements,ranks,time_us,time_min_us,time_max_us,"
         "p50_us,p99_us,cv,algbw_GBps,busbw_GBps,iterations,wrong_elements,skipped\n";
  for (const SweepRecord& r : records) {
    out << fmt::format("{},{},{},{},{},{},{},{},", name(r.op), name(r.dtype), r.redop ? name(*r.redop) : "",
                       r.root ? std::to_string(*r.root) : "", name(r.placement), r.bytes, r.count, r.ranks);
    if (r.timing) {
      const Timing& t = *r.timing;
      out << fmt::format("{},{},{},{},{},{},{},{},{},{},", t.time_us, t.time_min_us, t.time_max_us, t.p50_us, t.p99_us,
                         t.cv, t.algbw_gbs, t.busbw_gbs, t.iterations, t.wrong ? std::to_string(*t.wrong) : "");
      out << '\n';
    } else {
      out << ",,,,,,,,,," << cell(r.skipped) << '\n';
    }
  }
}

}  // namespace fabricbench
