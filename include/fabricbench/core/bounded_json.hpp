#pragma once
// Loading JSON that someone else wrote, within bounds: what `report` and the
// expectations loader parse goes through here, not through json::parse.
//  - nesting is limited at parse time (a value 10^5 levels deep would
//    otherwise overflow the stack of every recursive step after parsing:
//    schema checks, dump, comparisons);
//  - every way the parser can fail (syntax, a number like 1e309 that
//    overflows a double) becomes one UsageError naming the file;
//  - integers are read through integer_value / checked_integer, which check
//    the range in the target type before anything uses them, so 2^63-1 never
//    wraps to -1 and 1e20 never becomes 0.

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

namespace fabricbench {

// Deeper than any result, schema or expectations file needs (they use 8).
inline constexpr int max_json_depth = 64;

// The memory a parsed document may take, from the size of its text. A
// result fabricbench wrote takes 4 to 7 bytes per byte of its file (a
// 4096-rank result and the golden files, pretty or compact); 16 leaves room
// for a compact file of short keys, while a file of nothing but empty
// objects would take 32. Past the bound the parse stops with a UsageError
// before the memory is taken.
inline constexpr std::size_t json_memory_per_byte = 16;
inline constexpr std::size_t json_memory_slack = std::size_t{16} << 20;
constexpr std::size_t json_memory_budget(std::size_t text_bytes) {
  return json_memory_slack + json_memory_per_byte * text_bytes;
}

// Parses `text`. Throws UsageError:
//   "LABEL: nested deeper than 64 levels at records/0/x/x/..."
//   "LABEL: truncated or not JSON: <where and what>"
//   "LABEL: a number is out of range: number overflow parsing '1e309'"
//   "LABEL: its JSON would take more than 12 bytes of memory per byte ..."
nlohmann::json parse_bounded_json(std::string_view text, const std::string& label, int max_depth = max_json_depth);
// The same from an open file of `file_bytes` bytes, read as it is parsed: a
// large file's text is never held whole beside its document.
nlohmann::json parse_bounded_json(std::FILE* file, std::size_t file_bytes, const std::string& label,
                                  int max_depth = max_json_depth);

// Empties `document` without allocating. nlohmann's destructor takes a
// vector as long as the largest container to avoid deep recursion, which
// fails when memory has run out and, in a destructor, ends the process; a
// document dropped while an allocation failure unwinds goes through this
// first (parse_bounded_json does so itself).
void dismantle_json(nlohmann::json& document) noexcept;

// What the parser's accounting charges for one document (bytes), the
// measure json_memory_budget bounds; for tests and the fuzz target.
std::size_t json_memory_estimate(const nlohmann::json& document);

// The value of `v` as T when it is an integer that T holds: a JSON integer,
// or an integral floating-point number (JSON Schema counts 2.0 as an
// integer). nullopt for anything else, including an integer out of T's range.
template <typename T>
std::optional<T> integer_value(const nlohmann::json& v) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (!std::in_range<T>(u)) return std::nullopt;
    return static_cast<T>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (!std::in_range<T>(i)) return std::nullopt;
    return static_cast<T>(i);
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // [min, 2^digits): both ends are exact in a double.
    const double lo = static_cast<double>(std::numeric_limits<T>::min());
    const double hi = std::ldexp(1.0, std::numeric_limits<T>::digits);
    if (!std::isfinite(d) || std::floor(d) != d || d < lo || d >= hi) return std::nullopt;
    return static_cast<T>(d);
  }
  return std::nullopt;
}

// integer_value or a UsageError "WHERE: V is not an integer from MIN to MAX".
template <typename T>
T checked_integer(const nlohmann::json& v, std::string_view where, T minimum = std::numeric_limits<T>::min(),
                  T maximum = std::numeric_limits<T>::max());

void throw_integer_range(const nlohmann::json& v, std::string_view where, std::string_view minimum,
                         std::string_view maximum);

template <typename T>
T checked_integer(const nlohmann::json& v, std::string_view where, T minimum, T maximum) {
  const std::optional<T> value = integer_value<T>(v);
  if (!value || *value < minimum || *value > maximum)
    throw_integer_range(v, where, std::to_string(minimum), std::to_string(maximum));
  return *value;
}

}  // namespace fabricbench
