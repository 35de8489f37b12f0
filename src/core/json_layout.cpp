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
// The caller has checked all_scalars(v).
bool one_line(const ojson& v, std::string& line) {
  line.clear();
  const bool object = v.is_object();
  line += object ? '{' : '[';
  bool first = true;
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
std::string indent(int depth) { return std::string(static_cast<std::size_t>(2 * depth), ' '); }

void write_packed(const ojson& v, std::ostream& out, int depth, std::string& line) {
  const std::string inner = indent(depth + 1);
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
  out << '\n' << indent(depth) << ']';
}

class LayoutWriter {
 public:
  LayoutWriter(std::ostream& out, std::span<const StreamedArray> streamed) : out_(out), streamed_(streamed) {}

  void value(const ojson& v, int depth) {
    if (!v.is_structured() || v.empty()) {
      line_.clear();
      append_scalar(line_, v);
      out_ << line_;
      return;
    }
    const bool flat = all_scalars(v);
    if (flat && one_line(v, line_)) {
      out_ << line_;
      return;
    }
    if (v.is_array()) {
      if (flat) {
        write_packed(v, out_, depth, line_);
      } else {
        lines(depth, [&v](const auto& put) {
          for (const ojson& element : v) put(element);
        });
      }
      return;
    }
    const std::string inner = indent(depth + 1);
    out_ << '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      out_ << (first ? "\n" : ",\n") << inner;
      first = false;
      line_.clear();
      append_quoted(line_, it.key());
      out_ << line_ << ": ";
      path_.push_back(&it.key());
      if (const StreamedArray* s = streamed_here()) {
        stream(*s, depth + 1);
      } else {
        value(*it, depth + 1);
      }
      path_.pop_back();
    }
    out_ << '\n' << indent(depth) << '}';
  }

 private:
  [[nodiscard]] const StreamedArray* streamed_here() const {
    if (inside_) return nullptr;  // nothing inside a streamed element is streamed
    for (const StreamedArray& s : streamed_) {
      if (s.path.size() == path_.size() &&
          std::equal(s.path.begin(), s.path.end(), path_.begin(),
                     [](const std::string& a, const std::string* b) { return a == *b; }))
        return &s;
    }
    return nullptr;
  }

  void stream(const StreamedArray& s, int depth) {
    inside_ = true;
    lines(depth, s.each);
    inside_ = false;
  }

  // An array of containers, held or streamed: one element after another,
  // each on its own line or lines ("[]" when `each` gives none).
  template <class Each>
  void lines(int depth, const Each& each) {
    const std::string inner = indent(depth + 1);
    bool first = true;
    each([&](const ojson& element) {
      out_ << (first ? "[\n" : ",\n") << inner;
      first = false;
      value(element, depth + 1);
    });
    if (first)
      out_ << "[]";
    else
      out_ << '\n' << indent(depth) << ']';
  }

  std::ostream& out_;
  std::span<const StreamedArray> streamed_;
  std::vector<const std::string*> path_;  // the object keys from the root to here
  bool inside_ = false;                   // writing a streamed array's element
  std::string line_;
};

}  // namespace

void write_json_layout(const ojson& document, std::ostream& out, std::span<const StreamedArray> streamed) {
  LayoutWriter(out, streamed).value(document, 0);
  out << '\n';
}

}  // namespace fabricbench
