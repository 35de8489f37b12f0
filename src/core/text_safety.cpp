#include "fabricbench/core/text_safety.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace fabricbench {
namespace {

std::string escaped(std::string_view text, bool keep_layout) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (keep_layout && (c == '\n' || c == '\t')) {
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i + 1]));
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// A finite number: "-inf" and "-nan(…)" parse too, but a spreadsheet reads
// them as formulas naming inf or nan.
bool is_number(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(value);
}

}  // namespace

std::string terminal_safe(std::string_view text) { return escaped(text, true); }

std::string csv_safe_cell(std::string_view text) {
  const bool formula = !text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos;
  std::string cell = (formula && !is_number(text) ? "'" : "") + escaped(text, false);
  if (cell.find_first_of(",\"") == std::string::npos) return cell;
  std::string out = "\"";
  for (const char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

}  // namespace fabricbench
