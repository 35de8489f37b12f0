#pragma once
// The layout of the JSON files fabricbench writes: indented like dump(2),
// except that a container holding only scalars (a pair link, a matrix row,
// a host record's short lists) goes on one line when it fits in 100
// characters. A 512-node run's 261,632 pair links are then one line each:
// the file is 40% smaller than dump(2)'s and a link reads, greps and diffs
// as a unit. The text is written to the stream as it is made, never held
// whole in memory. Scalars are nlohmann's own text (same numbers, same
// escapes, the same refusal of invalid UTF-8).

#include <ostream>

#include <nlohmann/json.hpp>

namespace fabricbench {

void write_json_layout(const nlohmann::ordered_json& document, std::ostream& out);

}  // namespace fabricbench
