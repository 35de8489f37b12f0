#include "fabricbench/core/text.hpp"

#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace fabricbench {

std::string trim(std::string_view text) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  std::size_t b = 0;
  std::size_t e = text.size();
  while (b < e && space(text[b])) ++b;
  while (e > b && space(text[e - 1])) --e;
  return std::string(text.substr(b, e - b));
}

std::optional<int> whole_int(std::string_view text) {
  int v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}

std::string lower_ascii(std::string_view text) {
  std::string out(text);
  for (char& ch : out)
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  return out;
}

std::string money_text(double value, std::string_view currency) {
  std::string number;
  if (value >= 100 || value <= -100)
    number = fmt::format("{:.0f}", value);
  else if (value == 0 || std::abs(value) >= 0.001)
    number = fmt::format("{:.4g}", value);
  else
    number = fmt::format("{:.6f}", value);
  return currency.empty() ? number : fmt::format("{} {}", currency, number);
}

}  // namespace fabricbench
