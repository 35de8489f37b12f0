#pragma once
// The flat form of the sweep records, as the CSV has them: one row per
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

}  // namespace fabricbench
