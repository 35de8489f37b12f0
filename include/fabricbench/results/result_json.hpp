#pragma once
// The JSON form of a run result (the reader is results/reader.hpp).

#include <iosfwd>

#include <nlohmann/json.hpp>

#include "fabricbench/results/result.hpp"

namespace fabricbench {

// The JSON document of a run; schema "fabricbench.result/1", stable key order.
// Strings that are not UTF-8 are written as bytes and listed under
// "byte_strings" (core/byte_strings.hpp).
inline constexpr const char* result_schema_id = "fabricbench.result/1";
nlohmann::ordered_json to_json(const RunResult& result);
void write_json(const RunResult& result, std::ostream& out);

// The inverse of to_json for a document that validated against the schema,
// its byte strings decoded (results/reader.hpp does both for a file). Throws UsageError naming the path
// of a member that still does not read ("records/3/root: 4294967296 is not
// an integer from -2147483648 to 2147483647"); a required member that is missing is one too.
RunResult result_from_valid_json(const nlohmann::json& document);

}  // namespace fabricbench
