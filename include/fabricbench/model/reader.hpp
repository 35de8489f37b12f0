#pragma once
// Reading result files back into records: what `fabricbench report` works
// from. A file is checked before it is trusted: it must parse as JSON, name
// the schema "fabricbench.result/1" and validate against the schema built
// into the binary (src/schema/result.schema.json).

#include <string>

#include <nlohmann/json.hpp>

#include "fabricbench/model/result.hpp"

namespace fabricbench {

// The records of a validated document. Throws UsageError with one line
// naming `label` (the file) and the first problem:
//   "r.json: not a fabricbench result (schema 'foo/2', expected fabricbench.result/1)"
//   "r.json: records/3/busbw_gbs: -1 is less than the minimum 0"
RunResult result_from_json(const nlohmann::json& document, const std::string& label);

// Reads, parses, validates and converts one file. Throws UsageError:
//   "r.json: cannot read: No such file or directory"
//   "r.json: truncated or not JSON: <parser message>"
// and the errors of result_from_json.
RunResult read_result_file(const std::string& path);

}  // namespace fabricbench
