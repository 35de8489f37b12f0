#include "fabricbench/core/error.hpp"

#include <cstring>

#include <fmt/format.h>

namespace fabricbench {

std::string describe_failure(const char* call, const char* file, int line, const std::string& what) {
  return fmt::format("{}:{}: {} failed: {}", file, line, call, what);
}

// The one call of std::strerror, copied into a string at once.
std::string errno_text(int error) { return std::strerror(error); }  // NOLINT(concurrency-mt-unsafe)

}  // namespace fabricbench
