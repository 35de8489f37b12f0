// `fabricbench report`'s load path on hostile files: read, parse, schema and
// cross-field checks, then the report built and written as text, CSV and
// HTML, as `report FILE --csv X --html Y` does (to memory).
//
// Oracles on a file that loads (each a finding of the reliability review):
//  - a record with wrong elements never gets a verdict better than FAIL;
//  - integers are read as written (no wrap, no truncation of 2^32 or 1e20);
//  - text printed from the file carries no control characters;
//  - no CSV cell starts a spreadsheet formula (=, +, -, @, tab, CR) unless it
//    is a number;
//  - the HTML page stays within a bound proportional to the file;
//  - under AddressSanitizer, the heap a parsed document really holds is no
//    more than the parser charged for it (json_memory_estimate), which the
//    parser keeps within json_memory_budget of the input's size: memory is
//    bounded by the file (a file of empty objects once took 38 bytes per
//    byte, and a kind of value the accounting missed would be found here).

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FB_FUZZ_COUNTS_HEAP 1
#include <sanitizer/allocator_interface.h>
#endif
#endif
#ifndef FB_FUZZ_COUNTS_HEAP
#define FB_FUZZ_COUNTS_HEAP 0
#endif

#include "fabricbench/analysis/report.hpp"
#include "fabricbench/analysis/verdict.hpp"
#include "fabricbench/core/bounded_json.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/core/text_safety.hpp"
#include "fabricbench/output/file_writers.hpp"
#include "fabricbench/output/sections.hpp"
#include "fabricbench/results/reader.hpp"
#include "fuzz_support.hpp"

namespace {

using nlohmann::json;
using namespace fabricbench;

// The integer at `key` of `doc` against the value read; a mismatch is a misread.
template <typename T>
void same_integer(const json& doc, const char* key, T loaded, const std::string& where) {
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_number()) return;
  if (*it != json(loaded))
    fuzz::defect("oracle misread-integer",
                 fmt::format("{}/{} is {} in the file, read as {}", where, key, it->dump(), json(loaded).dump()));
}

void check_integers(const json& doc, const RunResult& result) {
  if (const auto run = doc.find("run"); run != doc.end() && run->is_object())
    same_integer(*run, "ranks", result.run.ranks, "run");
  const auto records = doc.find("records");
  if (records == doc.end() || !records->is_array() || records->size() != result.records.size()) return;
  for (std::size_t i = 0; i < result.records.size(); ++i) {
    const json& j = (*records)[i];
    const SweepRecord& r = result.records[i];
    const std::string where = fmt::format("records/{}", i);
    same_integer(j, "bytes", r.bytes, where);
    same_integer(j, "count", r.count, where);
    same_integer(j, "ranks", r.ranks, where);
    if (r.timing) same_integer(j, "iterations", r.timing->iterations, where);
  }
}

void check_wrong_data_fails(const Report& report) {
  for (const ReportRun& run : report.runs)
    for (const SweepRecord& r : run.result.records)
      if (r.timing && r.timing->wrong && *r.timing->wrong > 0 && report.level != Level::fail)
        fuzz::defect("oracle wrong-data-not-fail", fmt::format("a record with {} wrong elements gets verdict {}",
                                                               *r.timing->wrong, name(report.level)));
}

// RFC 4180 cells of one CSV document; a malformed quote ends the check.
std::vector<std::string> csv_cells(std::string_view text) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  bool at_start = true;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"' && at_start) {
      quoted = true;
      at_start = false;
    } else if (c == ',' || c == '\n') {
      cells.push_back(cell);
      cell.clear();
      at_start = true;
    } else {
      cell += c;
      at_start = false;
    }
  }
  if (!cell.empty()) cells.push_back(cell);
  return cells;
}

// A plain decimal number ("-1.5e3"); "-inf" and "nan" are not.
bool is_number(const std::string& cell) {
  if (cell.empty() || cell.find_first_not_of("0123456789.eE+-") != std::string::npos) return false;
  std::size_t used = 0;
  try {
    (void)std::stod(cell, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == cell.size();
}

void check_csv(const std::string& csv) {
  for (const std::string& cell : csv_cells(csv)) {
    if (cell.empty()) continue;
    const char c = cell.front();
    if ((c == '=' || c == '+' || c == '-' || c == '@' || c == '\t' || c == '\r') && !is_number(cell))
      fuzz::defect("oracle csv-formula", fmt::format("CSV cell '{}'", cell));
  }
}

void check_text(const std::string& text) {
  if (const std::size_t at = fuzz::find_control_char(text); at != std::string::npos)
    fuzz::defect("oracle control-char",
                 fmt::format("byte {:#04x} at offset {} of the text report", static_cast<unsigned char>(text[at]), at));
}

}  // namespace

// The heap the parsed document holds against the bound the parser keeps to
// (AddressSanitizer counts every live allocation; other builds skip this).
void check_document_memory(std::string_view bytes) {
#if FB_FUZZ_COUNTS_HEAP
  const std::size_t before = __sanitizer_get_current_allocated_bytes();
  try {
    const json doc = parse_bounded_json(bytes, "input");
    const std::size_t held = __sanitizer_get_current_allocated_bytes() - before;
    const std::size_t charged = json_memory_estimate(doc);
    if (held > charged || charged > json_memory_budget(bytes.size()))
      fuzz::defect("amplification", fmt::format("{} bytes of text hold {} bytes of heap; the parser charged {}, "
                                                "within a bound of {}",
                                                bytes.size(), held, charged, json_memory_budget(bytes.size())));
  } catch (const UsageError&) {
  }
#else
  (void)bytes;
#endif
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = fuzz::scratch_dir() + "/result.json";
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);  // NOLINT: bytes as text
  check_document_memory(bytes);
  fuzz::write_file(path, bytes);
  fuzz::guarded(fuzz::Accept::usage_errors, fuzz::Source::file, [&] {
    RunResult result = read_result_file(path);
    // read_result_file accepted it, so it parses.
    check_integers(json::parse(bytes), result);
    std::vector<ReportRun> runs;
    runs.push_back({path, std::move(result), {}, Level::ok, {}});
    const Report report = build_report(std::move(runs), ReportConfig{}, builtin_expectations());
    check_wrong_data_fails(report);
    // What `report` prints: the text passed through terminal_safe, as
    // run_report does (src/app/report_command.cpp).
    std::ostringstream text;
    print_report(report, text);
    check_text(terminal_safe(text.str()));
    std::ostringstream csv;
    write_report_csv(report, csv);
    check_csv(csv.str());
    std::ostringstream html;
    write_report_html(report, html);
    // A page of a few hundred bytes per byte of input is already generous
    // (the golden runs give about 10); the bound catches sizes taken from
    // the file's numbers rather than from what it holds.
    const std::size_t bound = 256 * size + (1U << 20);
    if (html.str().size() > bound)
      fuzz::defect("oracle html-size",
                   fmt::format("a {} byte file gives a {} byte page (bound {})", size, html.str().size(), bound));
  });
  return 0;
}
