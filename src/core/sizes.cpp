#include "fabricbench/core/sizes.hpp"

#include <cctype>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace fabricbench {

namespace {

// The multiplier's shift for a suffix: none or B; K, M, G, T (either case,
// as nccl-tests); KiB, MiB, GiB, TiB. -1 for anything else.
int suffix_shift(std::string_view suffix) {
  if (suffix.empty() || suffix == "B") return 0;
  const auto shift_of = [](char c) {
    switch (std::toupper(static_cast<unsigned char>(c))) {
      case 'K':
        return 10;
      case 'M':
        return 20;
      case 'G':
        return 30;
      case 'T':
        return 40;
      default:
        return -1;
    }
  };
  if (suffix.size() == 1) return shift_of(suffix[0]);
  if (suffix.size() == 3 && suffix.substr(1) == "iB") return shift_of(suffix[0]);
  return -1;
}

std::size_t leading_digits(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0) ++digits;
  return digits;
}

}  // namespace

std::optional<std::size_t> parse_size(std::string_view text) {
  const std::size_t digits = leading_digits(text);
  if (digits == 0) return std::nullopt;
  std::size_t value = 0;
  constexpr auto max = std::numeric_limits<std::size_t>::max();
  for (const char c : text.substr(0, digits)) {
    const auto d = static_cast<std::size_t>(c - '0');
    if (value > (max - d) / 10) return std::nullopt;
    value = value * 10 + d;
  }
  const int shift = suffix_shift(text.substr(digits));
  if (shift < 0) return std::nullopt;
  if (shift > 0 && value > (max >> shift)) return std::nullopt;
  return value << shift;
}

std::string size_error(std::string_view text) {
  const std::size_t digits = leading_digits(text);
  const std::string_view suffix = text.substr(digits);
  // 1MB, 1kb, 1Gb: decimal to some, binary to others, bits to a few.
  if (digits > 0 && suffix.size() == 2 && (suffix[1] == 'B' || suffix[1] == 'b') &&
      suffix_shift(suffix.substr(0, 1)) > 0) {
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0])));
    return fmt::format(
        "'{}' is ambiguous ({}{} means 10^n bytes to some, 2^n or bits to others): write {}{} or {}{}iB, "
        "both binary",
        text, unit, suffix[1], text.substr(0, digits), unit, text.substr(0, digits), unit);
  }
  if (digits > 0 && suffix == "b")
    return fmt::format("'{}' is ambiguous (b may mean bits): write {} or {}B for bytes", text, text.substr(0, digits),
                       text.substr(0, digits));
  return fmt::format("'{}' is not a size (bytes, or a binary K/M/G or KiB/MiB/GiB suffix, e.g. 64M = 64MiB)", text);
}

std::string format_size(std::size_t bytes) {
  constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  if (v == std::floor(v)) return fmt::format("{:.0f} {}", v, units[u]);
  return fmt::format("{:.1f} {}", v, units[u]);
}

std::vector<std::size_t> size_ladder(std::size_t min_bytes, std::size_t max_bytes, double factor, std::size_t align,
                                     std::size_t limit) {
  std::vector<std::size_t> sizes;
  if (align == 0 || !(factor > 1.0) || min_bytes > max_bytes) return sizes;
  std::size_t size = min_bytes;
  while (size <= max_bytes && sizes.size() < limit) {
    sizes.push_back(size);
    const double next = std::floor(static_cast<double>(size) * factor);
    if (next >= std::ldexp(1.0, 62)) break;  // far beyond any buffer
    std::size_t grown = static_cast<std::size_t>(next) / align * align;
    if (grown <= size) grown = size + align;
    size = grown;
  }
  return sizes;
}

}  // namespace fabricbench
