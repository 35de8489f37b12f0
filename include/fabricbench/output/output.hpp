#pragma once
// Result files: written whole or not at all (a temporary file beside the
// target, then rename), so an interrupted run leaves the last complete file.
// The rules are those of safe_file.hpp.

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "fabricbench/core/safe_file.hpp"
#include "fabricbench/results/result.hpp"

namespace fabricbench {

// Throws UsageError naming `flag` and `path` when the file cannot be created
// in its directory or is not a regular file (check_output_target).
void check_writable(const std::string& path, const std::string& flag);

// Writes through `produce` into a mkstemp temporary beside path, syncs, then
// renames onto path (write_file_safely). Throws SystemError on failure and
// leaves `path` as it was.
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& produce);

// Where a section's CSV goes beside the records' CSV: "r.csv" gives
// "r.ladder.csv"; a name without ".csv" gets ".ladder.csv" appended.
std::string section_csv_path(const std::string& csv_path, const std::string& section);

// The outputs `--csv csv_path` may write: csv_path and each section's file,
// named with their flag ("--csv", "--csv (ladder section)"), for
// check_distinct_outputs. Empty when csv_path is.
std::vector<NamedOutput> csv_outputs(const std::string& csv_path);

// The sections' CSV files of a result (results/result_csv.hpp), each beside
// `csv_path` (section_csv_path) and written atomically; a section the result
// does not hold writes no file. The records' own CSV is written by the caller.
void write_section_csv_files(const std::string& csv_path, const RunResult& result);

}  // namespace fabricbench
