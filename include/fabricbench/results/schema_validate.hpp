#pragma once
// JSON Schema validation for result files, so `report` checks a file against
// exactly the schema the tests use (src/schema/result.schema.json, compiled
// into the binary). The validator covers the draft-07 subset that schema
// uses: type (one or a list), enum, const, required, properties,
// additionalProperties (bool or schema), items, minItems, maxItems,
// uniqueItems (n log n), minLength, maxLength, pattern (ECMAScript subset,
// schema_pattern.hpp), minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, $ref to "#/..." pointers, allOf, anyOf,
// oneOf, not. Annotations (title, description, $id, $schema) are ignored.
// A keyword outside that subset is refused when the validator is built, so a
// schema change cannot silently weaken the check.
//
// The constructor compiles the schema once into plain nodes (each keyword
// parsed and worded, each $ref pointing at its target's node, recursion
// allowed); validate() walks those nodes, never the schema's JSON, and writes
// an error's path only when it records the error. Copies share the compiled
// nodes, so a copy is cheap and outlives the validator it was copied from.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace fabricbench {

namespace schema_detail {
struct Compiled;  // the schema as nodes (schema_validate.cpp)
}  // namespace schema_detail

struct SchemaError {
  std::string path;     // JSON pointer-like, "records/3/busbw_gbs"; empty for the document root
  std::string message;  // "-1 is less than the minimum 0"
};

class SchemaValidator {
 public:
  // Throws std::invalid_argument when the schema uses a keyword outside the
  // subset, a pattern outside the pattern subset, or a $ref that does not
  // resolve (or only leads through $refs back to itself).
  explicit SchemaValidator(nlohmann::json schema);

  // The first `max_errors` errors, in document order; empty when valid.
  [[nodiscard]] std::vector<SchemaError> validate(const nlohmann::json& document, std::size_t max_errors = 10) const;

 private:
  std::shared_ptr<const schema_detail::Compiled> compiled_;  // never changed after the constructor
};

// The text of src/schema/result.schema.json as built into the binary.
std::string_view result_schema_text();

// The text of src/data/expectations.json as built into the binary.
std::string_view expectations_text();

}  // namespace fabricbench
