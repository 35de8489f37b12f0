#pragma once
// The JSON form of a run result (the reader is model/reader.hpp).

#include <iosfwd>

#include <nlohmann/json.hpp>

#include "fabricbench/model/result.hpp"

namespace fabricbench {

// The JSON document of a run; schema "fabricbench.result/1", stable key order.
inline constexpr const char* result_schema_id = "fabricbench.result/1";
nlohmann::ordered_json to_json(const RunResult& result);
void write_json(const RunResult& result, std::ostream& out);

}  // namespace fabricbench
