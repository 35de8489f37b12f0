#include "fabricbench/core/error.hpp"

#include <fmt/format.h>

namespace fabricbench {

std::string describe_failure(const char* call, const char* file, int line, const std::string& what) {
  return fmt::format("{}:{}: {} failed: {}", file, line, call, what);
}

}  // namespace fabricbench
