#pragma once
// The file formats a run or a report is written in, each to an injected
// stream: CSV and HTML here; the JSON result in results/result_json.hpp.
// Terminal text is printed, not written (output/sections.hpp).

#include <iosfwd>

#include "fabricbench/analysis/report.hpp"
#include "fabricbench/results/result.hpp"
#include "fabricbench/results/result_csv.hpp"

namespace fabricbench {

// CSV: a header row, one row per sweep record with the run's identity
// first; the columns are the JSON's names (results/result_csv.hpp), plain
// numbers, empty cells for what was not measured.
void write_csv(const RunResult& result, std::ostream& out);

// One section's table (results/result_csv.hpp: section_csv_tables) as CSV,
// its header row first.
void write_csv_table(const CsvTable& table, std::ostream& out);

// CSV of a report: one file's records as `run --csv` writes them; several
// files' comparison in long form, one row per point and group: the group
// (A, B, ...), its runs' label and files, the point's key (op, dtype, redop,
// root, placement, bytes), the runs, busbw mean, sd, min, max, the ratio to
// the first group and, where there is none, why (analysis/report.hpp: Noise).
void write_report_csv(const Report& report, std::ostream& out);

// One self-contained HTML page: inline CSS and SVG charts drawn here, no
// scripts, fonts or links to fetch.
void write_report_html(const Report& report, std::ostream& out);

}  // namespace fabricbench
