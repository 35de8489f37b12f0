#pragma once
// The flat form of a result, as the CSV has it. The sweep records: one row per
// record, the run's identity first (so files from two runs or providers can
// be concatenated), then the record's members under their JSON names, from
// the same field list as the JSON (each record's, beside it).

#include <string>
#include <vector>

#include "fabricbench/results/result.hpp"

namespace fabricbench {

struct CsvCell {
  std::string text;
  bool is_text = false;  // free text (quoted and defused by the writer); else a number or a name
};

// "start_utc", "label", "hostnames", then "op", "dtype", ... "skipped".
std::vector<std::string> record_csv_columns();

// One cell per column; an empty cell where the JSON has null or nothing.
// hostnames are joined with spaces.
std::vector<CsvCell> record_csv_row(const RunInfo& run, const SweepRecord& record);

// Every other section of a result as its own table, for a spreadsheet: one
// row per measured thing (a ladder group, a GPU set, a link, a finding, an
// island or bisection pair, a projection point, a storage node), the run's
// identity first as in the records' rows, then what names the row within its
// section, then its figures; empty cells where a figure does not apply.
struct CsvTable {
  std::string section;  // "ladder", "gpu_ladder", "pairs", "findings", "placement", "projection", "storage"
  std::vector<std::string> columns;
  std::vector<std::vector<CsvCell>> rows;  // one cell per column
};

// The sections' names, in the order section_csv_tables gives them.
const std::vector<std::string>& csv_section_names();

// The tables of the sections `result` holds (a section it lacks, or one
// with no rows, is left out), in csv_section_names' order.
std::vector<CsvTable> section_csv_tables(const RunResult& result);

}  // namespace fabricbench
