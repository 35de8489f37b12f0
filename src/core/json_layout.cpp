#include "fabricbench/core/json_layout.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "fabricbench/core/byte_strings.hpp"
#include "fabricbench/core/error.hpp"

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

std::string indent(int depth) { return std::string(static_cast<std::size_t>(2 * depth), ' '); }

// Writes a document as the header says. A string or member name that is
// not UTF-8 is written as bytes and its place listed (core/byte_strings.hpp);
// the list closes the root object.
class LayoutWriter {
 public:
  LayoutWriter(std::ostream& out, std::span<const StreamedArray> streamed) : out_(out), streamed_(streamed) {}

  void value(const ojson& v, int depth) {
    if (!v.is_structured() || v.empty()) {
      line_.clear();
      scalar(line_, v);
      out_ << line_;
      return;
    }
    const bool flat = all_scalars(v);
    const std::size_t values_before = found_.values.size();
    const std::size_t names_before = found_.names.size();
    if (flat && one_line(v, line_)) {
      // A root object that wrote bytes needs a line more for their list.
      const bool listed = found_.values.size() != values_before || found_.names.size() != names_before;
      if (depth > 0 || !listed) {
        out_ << line_;
        return;
      }
      found_.values.resize(values_before);
      found_.names.resize(names_before);
    }
    if (v.is_array()) {
      if (flat) {
        packed(v, depth);
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
      const std::size_t mark = at_.size();
      line_.clear();
      name(line_, it.key());
      out_ << line_ << ": ";
      path_.push_back(&it.key());
      if (const StreamedArray* s = streamed_here()) {
        stream(*s, depth + 1);
      } else {
        value(*it, depth + 1);
      }
      path_.pop_back();
      at_.resize(mark);
    }
    if (depth == 0 && !found_.empty()) {
      out_ << ",\n" << inner << '"' << byte_strings_key << "\": ";
      const ojson list = to_json(found_);
      found_ = {};
      value(list, depth + 1);
    }
    out_ << '\n' << indent(depth) << '}';
  }

  [[nodiscard]] bool bytes_unlisted() const { return !found_.empty(); }

 private:
  // A member name, quoted, after its pointer token is added to at_.
  void name(std::string& out, const std::string& key) {
    if (is_utf8(key)) {
      append_pointer_token(at_, key);
      append_quoted(out, key);
    } else {
      const std::string shown = bytes_as_text(key);
      append_pointer_token(at_, shown);
      found_.names.push_back(at_);
      append_quoted(out, shown);
    }
  }

  // A scalar as dump() writes it, without dump()'s string per value: a
  // result file holds millions of them. at_ is its place.
  void scalar(std::string& out, const ojson& v) {
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
    } else if (v.is_string()) {
      const std::string& text = v.get_ref<const std::string&>();
      if (is_utf8(text)) {
        append_quoted(out, text);
      } else {
        found_.values.push_back(at_);
        append_quoted(out, bytes_as_text(text));
      }
    } else {
      out += v.dump();
    }
  }

  // `v` on one line ("{"a": 1, "b": [2, 3]}" style) in `line`, when it
  // holds only scalars (or empty containers) and fits the limit. The caller
  // has checked all_scalars(v). What it lists is kept only when it fits.
  bool one_line(const ojson& v, std::string& line) {
    const std::size_t values_before = found_.values.size();
    const std::size_t names_before = found_.names.size();
    line.clear();
    const bool object = v.is_object();
    line += object ? '{' : '[';
    bool first = true;
    bool fits = true;
    std::size_t index = 0;
    for (auto it = v.begin(); it != v.end() && fits; ++it, ++index) {
      if (!first) line += ", ";
      first = false;
      const std::size_t mark = at_.size();
      if (object) {
        name(line, it.key());
        line += ": ";
      } else {
        fmt::format_to(std::back_inserter(at_), "/{}", index);
      }
      scalar(line, *it);
      at_.resize(mark);
      fits = line.size() <= line_limit;
    }
    line += object ? '}' : ']';
    if (fits && line.size() <= line_limit) return true;
    found_.values.resize(values_before);  // written again, line by line
    found_.names.resize(names_before);
    return false;
  }

  // A long array of scalars (ranks per node, a ladder group's hosts): as
  // many items to a line as fit.
  void packed(const ojson& v, int depth) {
    const std::string inner = indent(depth + 1);
    out_ << "[\n" << inner;
    std::size_t width = 0;
    std::size_t index = 0;
    for (auto it = v.begin(); it != v.end(); ++it, ++index) {
      line_.clear();
      const std::size_t mark = at_.size();
      fmt::format_to(std::back_inserter(at_), "/{}", index);
      scalar(line_, *it);
      at_.resize(mark);
      if (it != v.begin()) {
        if (width + line_.size() + 2 > line_limit) {
          out_ << ",\n" << inner;
          width = 0;
        } else {
          out_ << ", ";
          width += 2;
        }
      }
      out_ << line_;
      width += line_.size();
    }
    out_ << '\n' << indent(depth) << ']';
  }

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
    std::size_t index = 0;
    each([&](const ojson& element) {
      out_ << (first ? "[\n" : ",\n") << inner;
      first = false;
      const std::size_t mark = at_.size();
      fmt::format_to(std::back_inserter(at_), "/{}", index++);
      value(element, depth + 1);
      at_.resize(mark);
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
  std::string at_;     // the JSON pointer of what is being written
  ByteStrings found_;  // the strings written as bytes so far
};

}  // namespace

void write_json_layout(const ojson& document, std::ostream& out, std::span<const StreamedArray> streamed) {
  LayoutWriter writer(out, streamed);
  writer.value(document, 0);
  // Only an object can list them.
  if (writer.bytes_unlisted())
    throw SystemError("a JSON document that is not an object holds bytes that are not UTF-8");
  out << '\n';
}

}  // namespace fabricbench
