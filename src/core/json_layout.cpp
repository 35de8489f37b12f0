#include "fabricbench/core/json_layout.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <string>

#include <fmt/format.h>

namespace fabricbench {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::size_t line_limit = 100;

bool plain(const std::string& key) {
  return std::all_of(key.begin(), key.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
}

void append_quoted(std::string& out, const std::string& text) {
  if (plain(text)) {
    out += '"';
    out += text;
    out += '"';
  } else {
    out += ojson(text).dump();
  }
}

bool all_scalars(const ojson& v) {
  return std::none_of(v.begin(), v.end(), [](const ojson& item) { return item.is_structured() && !item.empty(); });
}

// A scalar as dump() writes it, without dump()'s string per value: a
// result file holds millions of them.
void append_scalar(std::string& out, const ojson& v) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d)) {
      out += "null";  // as dump() writes NaN and infinity
      return;
    }
    std::array<char, 64> digits{};
    // nlohmann's own shortest round-trip text, the one dump() uses.
    const char* end = nlohmann::detail::to_chars(digits.data(), digits.data() + digits.size(), d);
    out.append(digits.data(), static_cast<std::size_t>(end - digits.data()));
  } else if (v.is_number_unsigned()) {
    fmt::format_to(std::back_inserter(out), "{}", v.get<std::uint64_t>());
  } else if (v.is_number_integer()) {
    fmt::format_to(std::back_inserter(out), "{}", v.get<std::int64_t>());
  } else if (v.is_string() && plain(v.get_ref<const std::string&>())) {
    append_quoted(out, v.get_ref<const std::string&>());
  } else {
    out += v.dump();
  }
}

// `v` on one line ("{"a": 1, "b": [2, 3]}" style) in `line`, when it holds
// only scalars (or empty containers) and fits the limit.
bool one_line(const ojson& v, std::string& line) {
  line.clear();
  const bool object = v.is_object();
  line += object ? '{' : '[';
  bool first = true;
  if (!all_scalars(v)) return false;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) line += ", ";
    first = false;
    if (object) {
      append_quoted(line, it.key());
      line += ": ";
    }
    append_scalar(line, *it);
    if (line.size() > line_limit) return false;
  }
  line += object ? '}' : ']';
  return line.size() <= line_limit;
}

// A long array of scalars (ranks per node, a ladder group's hosts): as many
// items to a line as fit.
void write_packed(const ojson& v, std::ostream& out, int depth, std::string& line) {
  const std::string inner(static_cast<std::size_t>(2 * (depth + 1)), ' ');
  out << "[\n" << inner;
  std::size_t width = 0;
  for (auto it = v.begin(); it != v.end(); ++it) {
    line.clear();
    append_scalar(line, *it);
    if (it != v.begin()) {
      if (width + line.size() + 2 > line_limit) {
        out << ",\n" << inner;
        width = 0;
      } else {
        out << ", ";
        width += 2;
      }
    }
    out << line;
    width += line.size();
  }
  out << '\n' << std::string(static_cast<std::size_t>(2 * depth), ' ') << ']';
}

void write_value(const ojson& v, std::ostream& out, int depth, std::string& line) {
  if (!v.is_structured() || v.empty()) {
    line.clear();
    append_scalar(line, v);
    out << line;
    return;
  }
  if (one_line(v, line)) {
    out << line;
    return;
  }
  const bool object = v.is_object();
  if (!object && all_scalars(v)) {
    write_packed(v, out, depth, line);
    return;
  }
  const std::string inner(static_cast<std::size_t>(2 * (depth + 1)), ' ');
  out << (object ? '{' : '[');
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    out << (first ? "\n" : ",\n") << inner;
    first = false;
    if (object) {
      line.clear();
      append_quoted(line, it.key());
      out << line << ": ";
    }
    write_value(*it, out, depth + 1, line);
  }
  out << '\n' << std::string(static_cast<std::size_t>(2 * depth), ' ') << (object ? '}' : ']');
}

}  // namespace

void write_json_layout(const ojson& document, std::ostream& out) {
  std::string line;
  write_value(document, out, 0, line);
  out << '\n';
}

}  // namespace fabricbench
