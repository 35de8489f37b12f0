#include "fabricbench/core/sizes.hpp"

#include <cctype>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace fabricbench {

std::optional<std::size_t> parse_size(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::size_t digits = 0;
  std::size_t value = 0;
  constexpr auto max = std::numeric_limits<std::size_t>::max();
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0) {
    const auto d = static_cast<std::size_t>(text[digits] - '0');
    if (value > (max - d) / 10) return std::nullopt;
    value = value * 10 + d;
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  const std::string_view suffix = text.substr(digits);
  int shift = 0;
  if (suffix.empty() || suffix == "B" || suffix == "b") {
    shift = 0;
  } else if (suffix.size() == 1 || (suffix.size() == 2 && (suffix[1] == 'B' || suffix[1] == 'b'))) {
    switch (std::toupper(static_cast<unsigned char>(suffix[0]))) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
      default:
        return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  if (shift > 0 && value > (max >> shift)) return std::nullopt;
  return value << shift;
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
