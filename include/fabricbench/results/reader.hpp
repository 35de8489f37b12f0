#pragma once
// Reading result files back into records: what `fabricbench report` works
// from. A file is checked before it is trusted: it must parse as JSON, name
// the schema "fabricbench.result/1" and validate against the schema built
// into the binary (src/schema/result.schema.json).

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "fabricbench/results/result.hpp"

namespace fabricbench {

// The records of a validated document. Throws UsageError with one line
// naming `label` (the file) and the first problem:
//   "r.json: not a fabricbench result (schema 'foo/2', expected fabricbench.result/1)"
//   "r.json: records/3/busbw_gbs: -1 is less than the minimum 0"
RunResult result_from_json(const nlohmann::json& document, const std::string& label);

// The largest result file `report` reads: a 4096-rank result is about
// 40 MB, and its pair links grow with the square of the node count.
inline constexpr std::size_t largest_result_file_bytes = std::size_t{1} << 30U;

// Reads, parses, validates and converts one file. Throws UsageError:
//   "r.json: cannot read: No such file or directory"
//   "r.json: is a fifo, not a regular file; report reads result files only"
//   "r.json: 2147483648 bytes, above the 1 GiB a result file may have"
//   "r.json: truncated or not JSON: <parser message>"
// and the errors of parse_bounded_json and result_from_json.
RunResult read_result_file(const std::string& path);

}  // namespace fabricbench
