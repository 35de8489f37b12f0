#include "fabricbench/results/reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "fabricbench/core/bounded_json.hpp"
#include "fabricbench/core/byte_strings.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/core/safe_file.hpp"
#include "fabricbench/results/result_consistency.hpp"
#include "fabricbench/results/result_json.hpp"
#include "fabricbench/results/schema_validate.hpp"

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
  // The strings written as bytes, back to their bytes (core/byte_strings.hpp).
  nlohmann::json decoded;
  const bool bytes = document.contains(byte_strings_key);
  if (bytes) {
    decoded = document;
    decode_byte_strings(decoded, label);
  }
  try {
    RunResult result = result_from_valid_json(bytes ? decoded : document);
    check_consistency(result);
    return result;
  } catch (const json::exception& e) {
    throw UsageError(fmt::format("{}: does not read as a result: {}", label, e.what()));
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", label, e.what()));
  }
}

RunResult read_result_file(const std::string& path) {
  const auto cannot_read = [&path] { return UsageError(fmt::format("{}: cannot read: {}", path, errno_text(errno))); };
  // Opened without waiting (a fifo with no writer would block the open) and
  // judged by what was opened, not by the name: only a regular file of at
  // most largest_result_file_bytes is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // NOLINT(cppcoreguidelines-pro-type-vararg)
  if (fd < 0) throw cannot_read();
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(::fdopen(fd, "rb"), &std::fclose);
  if (!file) {
    const UsageError error = cannot_read();
    ::close(fd);
    throw error;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw cannot_read();
  if (!S_ISREG(st.st_mode))
    throw UsageError(
        fmt::format("{}: is {}, not a regular file; report reads result files only", path, file_kind(st.st_mode)));
  const auto bytes = static_cast<std::size_t>(st.st_size);
  if (bytes > largest_result_file_bytes)
    throw UsageError(fmt::format("{}: {} bytes, above the {} GiB a result file may have", path, bytes,
                                 largest_result_file_bytes >> 30U));
  // Parsed as it is read: a large file's text, document and result are
  // never in memory all at once.
  json document = parse_bounded_json(file.get(), bytes, path);
  try {
    return result_from_json(document, path);
  } catch (...) {
    dismantle_json(document);  // out of memory included: the document goes without allocating
    throw;
  }
}

}  // namespace fabricbench
