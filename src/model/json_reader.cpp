#include "fabricbench/model/reader.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "fabricbench/core/bounded_json.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/model/result_consistency.hpp"
#include "fabricbench/model/result_json.hpp"
#include "fabricbench/model/schema_validate.hpp"

namespace fabricbench {
using json = nlohmann::json;

RunResult result_from_json(const nlohmann::json& document, const std::string& label) {
  if (!document.is_object())
    throw UsageError(
        fmt::format("{}: not a fabricbench result (a JSON {}, not an object)", label, document.type_name()));
  const auto schema = document.find("schema");
  if (schema == document.end() || !schema->is_string())
    throw UsageError(
        fmt::format("{}: not a fabricbench result (no \"schema\" member; expected {})", label, result_schema_id));
  if (schema->get<std::string>() != result_schema_id)
    throw UsageError(fmt::format("{}: not a fabricbench result (schema '{}', expected {})", label,
                                 schema->get<std::string>(), result_schema_id));
  const SchemaValidator validator(json::parse(result_schema_text()));
  const std::vector<SchemaError> errors = validator.validate(document, 1);
  if (!errors.empty()) {
    const SchemaError& e = errors.front();
    throw UsageError(fmt::format("{}: {}{}", label, e.path.empty() ? "" : e.path + ": ", e.message));
  }
  try {
    RunResult result = result_from_valid_json(document);
    check_consistency(result);
    return result;
  } catch (const json::exception& e) {
    throw UsageError(fmt::format("{}: does not read as a result: {}", label, e.what()));
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", label, e.what()));
  }
}

RunResult read_result_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  // Parsed as it is read: a large file's text, document and result are
  // never in memory all at once.
  const json document = parse_bounded_json(in, path);
  return result_from_json(document, path);
}

}  // namespace fabricbench
