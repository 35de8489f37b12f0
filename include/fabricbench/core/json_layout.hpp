#pragma once
// The layout of the JSON files fabricbench writes: indented like dump(2),
// except that a container holding only scalars (a pair link, a matrix row,
// a host record's short lists) goes on one line when it fits in 100
// characters. A 512-node run's 261,632 pair links are then one line each:
// the file is 40% smaller than dump(2)'s and a link reads, greps and diffs
// as a unit. The text is written to the stream as it is made, never held
// whole in memory. Scalars are nlohmann's own text (same numbers, same
// escapes). A string or member name that is not UTF-8 is written as bytes
// and listed in the root object's "byte_strings" (core/byte_strings.hpp).

#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fabricbench {

// An array whose elements are made one at a time as they are written, so a
// large one (261,632 pair links, 512 node records) is never a tree in memory
// all at once. The document holds a placeholder at `path` (object keys from
// the root; any non-empty array) and `each` hands the elements to `put` in
// order. The elements must be non-empty objects or arrays, as records are:
// the array is then laid out exactly as it would be if the document held
// it, one element after another.
struct StreamedArray {
  std::vector<std::string> path;
  std::function<void(const std::function<void(const nlohmann::ordered_json&)>& put)> each;
};

void write_json_layout(const nlohmann::ordered_json& document, std::ostream& out,
                       std::span<const StreamedArray> streamed = {});

}  // namespace fabricbench
