// The size parser of -b/-e/--sizes/--pair-bytes and gates' @ARG: "8", "1K",
// "64M", "2GB". A size that parses must read back the same from its decimal
// form and format without throwing.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "fabricbench/core/sizes.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fabricbench;
  const std::string_view text(reinterpret_cast<const char*>(data), size);  // NOLINT: bytes as text
  fuzz::guarded(fuzz::Accept::usage_errors, fuzz::Source::command_line, [&] {
    const auto bytes = parse_size(text);
    if (!bytes) return;
    const std::string decimal = std::to_string(*bytes);
    if (parse_size(decimal) != bytes)
      fuzz::defect("oracle size-round-trip", fmt::format("'{}' is {} bytes, which does not read back", text, *bytes));
    if (format_size(*bytes).empty()) fuzz::defect("oracle size-format", fmt::format("'{}' formats empty", text));
  });
  return 0;
}
