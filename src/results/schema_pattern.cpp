#include "fabricbench/results/detail/schema_pattern.hpp"

#include <memory>
#include <stdexcept>

#include <fmt/format.h>

namespace fabricbench {
namespace {

using Bytes = std::bitset<256>;

// The parsed pattern. Parsing recurses over the pattern (a schema's short
// string, trusted), never over the text.
struct Node {
  enum class Kind { bytes, begin, end, concat, alternate, repeat } kind = Kind::concat;
  Bytes set;
  std::vector<std::unique_ptr<Node>> parts;
  int min = 0;
  int max = 0;  // -1: unbounded
};

constexpr std::size_t max_program = 10000;

Bytes class_escape(char c, bool& known) {
  Bytes b;
  known = true;
  const auto range = [&b](int lo, int hi) {
    for (int i = lo; i <= hi; ++i) b.set(static_cast<std::size_t>(i));
  };
  switch (c) {
    case 'd':
    case 'D':
      range('0', '9');
      break;
    case 'w':
    case 'W':
      range('0', '9');
      range('a', 'z');
      range('A', 'Z');
      b.set('_');
      break;
    case 's':
    case 'S':
      for (const char s : {' ', '\t', '\n', '\r', '\f', '\v'}) b.set(static_cast<unsigned char>(s));
      break;
    default:
      known = false;
      return b;
  }
  if (c == 'D' || c == 'W' || c == 'S') b.flip();
  return b;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::unique_ptr<Node> parse() {
    auto node = alternation();
    if (pos_ != text_.size()) fail("unbalanced ')'");
    return node;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument(fmt::format("pattern '{}': {} at offset {}", text_, why, pos_));
  }
  [[nodiscard]] bool at_end() const { return pos_ >= text_.size(); }
  [[nodiscard]] char peek() const { return text_[pos_]; }

  std::unique_ptr<Node> alternation() {
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::alternate;
    node->parts.push_back(sequence());
    while (!at_end() && peek() == '|') {
      ++pos_;
      node->parts.push_back(sequence());
    }
    if (node->parts.size() == 1) return std::move(node->parts.front());
    return node;
  }

  std::unique_ptr<Node> sequence() {
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::concat;
    while (!at_end() && peek() != '|' && peek() != ')') node->parts.push_back(repeated());
    return node;
  }

  int number() {
    int value = 0;
    const std::size_t start = pos_;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      value = value * 10 + (peek() - '0');
      if (value > 1000) fail("a repeat count above 1000");
      ++pos_;
    }
    if (pos_ == start) fail("a repeat count expected");
    return value;
  }

  std::unique_ptr<Node> repeated() {
    auto atom_node = atom();
    while (!at_end()) {
      int min = 0;
      int max = -1;
      const char c = peek();
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        min = 1;
        ++pos_;
      } else if (c == '?') {
        max = 1;
        ++pos_;
      } else if (c == '{') {
        ++pos_;
        min = number();
        max = min;
        if (!at_end() && peek() == ',') {
          ++pos_;
          max = !at_end() && peek() == '}' ? -1 : number();
        }
        if (at_end() || peek() != '}') fail("'}' expected");
        ++pos_;
        if (max != -1 && max < min) fail("a repeat range whose maximum is below its minimum");
      } else {
        break;
      }
      if (!at_end() && peek() == '?') ++pos_;  // lazy: the same answer for search
      if (atom_node->kind == Node::Kind::begin || atom_node->kind == Node::Kind::end) fail("a repeated anchor");
      auto node = std::make_unique<Node>();
      node->kind = Node::Kind::repeat;
      node->min = min;
      node->max = max;
      node->parts.push_back(std::move(atom_node));
      atom_node = std::move(node);
    }
    return atom_node;
  }

  Bytes escape_in_class_or_text() {
    if (at_end()) fail("a trailing backslash");
    const char c = peek();
    ++pos_;
    bool known = false;
    Bytes b = class_escape(c, known);
    if (known) return b;
    switch (c) {
      case 'n':
        b.set('\n');
        break;
      case 't':
        b.set('\t');
        break;
      case 'r':
        b.set('\r');
        break;
      case 'f':
        b.set('\f');
        break;
      case 'v':
        b.set('\v');
        break;
      default:
        // Escaped punctuation stands for itself; an escaped letter or digit
        // (\b, \1, \u...) is syntax this subset does not have.
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
          fail(fmt::format("the escape \\{} is not supported", c));
        b.set(static_cast<unsigned char>(c));
    }
    return b;
  }

  Bytes bracket() {
    Bytes b;
    bool negate = false;
    if (!at_end() && peek() == '^') {
      negate = true;
      ++pos_;
    }
    bool first = true;
    while (true) {
      if (at_end()) fail("']' expected");
      if (peek() == ']' && !first) break;
      first = false;
      Bytes item;
      int lo = -1;
      if (peek() == '\\') {
        ++pos_;
        item = escape_in_class_or_text();
        if (item.count() == 1)
          for (int i = 0; i < 256; ++i)
            if (item.test(static_cast<std::size_t>(i))) lo = i;
      } else {
        lo = static_cast<unsigned char>(peek());
        item.set(static_cast<std::size_t>(lo));
        ++pos_;
      }
      if (lo >= 0 && pos_ + 1 < text_.size() && peek() == '-' && text_[pos_ + 1] != ']') {
        ++pos_;
        int hi = 0;
        if (peek() == '\\') {
          ++pos_;
          const Bytes end = escape_in_class_or_text();
          if (end.count() != 1) fail("a class escape as the end of a range");
          for (int i = 0; i < 256; ++i)
            if (end.test(static_cast<std::size_t>(i))) hi = i;
        } else {
          hi = static_cast<unsigned char>(peek());
          ++pos_;
        }
        if (hi < lo) fail("a range out of order");
        for (int i = lo; i <= hi; ++i) item.set(static_cast<std::size_t>(i));
      }
      b |= item;
    }
    ++pos_;  // ']'
    if (negate) b.flip();
    return b;
  }

  std::unique_ptr<Node> atom() {
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::bytes;
    const char c = peek();
    ++pos_;
    switch (c) {
      case '^':
        node->kind = Node::Kind::begin;
        break;
      case '$':
        node->kind = Node::Kind::end;
        break;
      case '.':
        node->set.set();
        node->set.reset('\n');
        node->set.reset('\r');
        break;
      case '[':
        node->set = bracket();
        break;
      case '\\':
        node->set = escape_in_class_or_text();
        break;
      case '(': {
        if (text_.substr(pos_, 2) == "?:")
          pos_ += 2;
        else if (!at_end() && peek() == '?')
          fail("lookaround and named groups are not supported");
        node = alternation();
        if (at_end() || peek() != ')') fail("')' expected");
        ++pos_;
        break;
      }
      case '*':
      case '+':
      case '?':
      case '{':
        fail(fmt::format("'{}' with nothing to repeat", c));
      default:
        node->set.set(static_cast<unsigned char>(c));
    }
    return node;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

using Instruction = SchemaPattern::Instruction;
using Kind = Instruction::Kind;

class Compiler {
 public:
  Compiler(std::vector<Instruction>& program, std::vector<Bytes>& sets) : program_(program), sets_(sets) {}

  void emit(const Node& node) {
    if (program_.size() > max_program) throw std::invalid_argument("pattern: more than 10000 instructions");
    switch (node.kind) {
      case Node::Kind::bytes:
        sets_.push_back(node.set);
        add({Kind::byte_set, static_cast<int>(sets_.size() - 1), 0});
        break;
      case Node::Kind::begin:
        add({Kind::begin, 0, 0});
        break;
      case Node::Kind::end:
        add({Kind::end, 0, 0});
        break;
      case Node::Kind::concat:
        for (const auto& part : node.parts) emit(*part);
        break;
      case Node::Kind::alternate: {
        std::vector<int> jumps;
        for (std::size_t i = 0; i < node.parts.size(); ++i) {
          if (i + 1 < node.parts.size()) {
            const int split = add({Kind::split, 0, 0});
            program_[static_cast<std::size_t>(split)].x = here();
            emit(*node.parts[i]);
            jumps.push_back(add({Kind::jump, 0, 0}));
            program_[static_cast<std::size_t>(split)].y = here();
          } else {
            emit(*node.parts[i]);
          }
        }
        for (const int j : jumps) program_[static_cast<std::size_t>(j)].x = here();
        break;
      }
      case Node::Kind::repeat: {
        const Node& body = *node.parts.front();
        for (int i = 0; i < node.min; ++i) emit(body);
        if (node.max == -1) {
          const int split = add({Kind::split, 0, 0});
          program_[static_cast<std::size_t>(split)].x = here();
          emit(body);
          add({Kind::jump, split, 0});
          program_[static_cast<std::size_t>(split)].y = here();
        } else {
          std::vector<int> splits;
          for (int i = node.min; i < node.max; ++i) {
            const int split = add({Kind::split, 0, 0});
            program_[static_cast<std::size_t>(split)].x = here();
            splits.push_back(split);
            emit(body);
          }
          for (const int s : splits) program_[static_cast<std::size_t>(s)].y = here();
        }
        break;
      }
    }
  }

  int add(Instruction i) {
    program_.push_back(i);
    return static_cast<int>(program_.size() - 1);
  }
  [[nodiscard]] int here() const { return static_cast<int>(program_.size()); }

 private:
  std::vector<Instruction>& program_;
  std::vector<Bytes>& sets_;
};

}  // namespace

SchemaPattern::SchemaPattern(std::string_view pattern) {
  if (pattern.size() > 1000) throw std::invalid_argument("pattern: longer than 1000 characters");
  const std::unique_ptr<Node> tree = Parser(pattern).parse();
  Compiler compiler(program_, sets_);
  compiler.emit(*tree);
  compiler.add({Instruction::Kind::match, 0, 0});
  if (program_.size() > max_program)
    throw std::invalid_argument(fmt::format("pattern '{}': more than {} instructions", pattern, max_program));
}

bool SchemaPattern::search(std::string_view text) const {
  const std::size_t n = program_.size();
  std::vector<int> current;
  std::vector<int> next;
  std::vector<std::size_t> seen(n, static_cast<std::size_t>(-1));  // the step a pc was last added in
  std::vector<int> stack;
  // Adds pc and everything reachable from it without reading a byte, at
  // text position `at`; true when that reaches a match.
  const auto add = [&](std::vector<int>& list, int start, std::size_t at, std::size_t step) {
    stack.push_back(start);
    while (!stack.empty()) {
      const int pc = stack.back();
      stack.pop_back();
      const auto u = static_cast<std::size_t>(pc);
      if (seen[u] == step) continue;
      seen[u] = step;
      const Instruction& in = program_[u];
      switch (in.kind) {
        case Kind::byte_set:
          list.push_back(pc);
          break;
        case Kind::split:
          stack.push_back(in.y);
          stack.push_back(in.x);
          break;
        case Kind::jump:
          stack.push_back(in.x);
          break;
        case Kind::begin:
          if (at == 0) stack.push_back(pc + 1);
          break;
        case Kind::end:
          if (at == text.size()) stack.push_back(pc + 1);
          break;
        case Kind::match:
          stack.clear();
          return true;
      }
    }
    return false;
  };
  // Threads entering text position i are added in step i, so `seen` needs no
  // clearing between steps.
  for (std::size_t i = 0; i <= text.size(); ++i) {
    // A new thread at every position: search, not match.
    if (add(current, 0, i, i)) return true;
    if (i == text.size()) break;
    next.clear();
    const auto byte = static_cast<unsigned char>(text[i]);
    for (const int pc : current) {
      const Instruction& in = program_[static_cast<std::size_t>(pc)];
      if (sets_[static_cast<std::size_t>(in.x)].test(byte) && add(next, pc + 1, i + 1, i + 1)) return true;
    }
    current.swap(next);
  }
  return false;
}

}  // namespace fabricbench
