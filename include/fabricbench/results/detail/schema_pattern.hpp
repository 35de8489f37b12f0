#pragma once
// The `pattern` keyword of JSON Schema without std::regex. libstdc++'s regex
// matches by recursion, one stack frame per character, so a 100 KB string in
// a pattern-checked field overflowed the stack. This is a Thompson-NFA
// matcher (a Pike VM): time linear in the text times the pattern's size, no
// recursion over the text, memory bounded by the pattern.
//
// The syntax is the ECMAScript subset schemas use: literals, `.`, classes
// `[a-z0-9_]` and `[^...]`, escapes (`\d \D \w \W \s \S \. \\ \n \t` and any
// escaped punctuation), groups `(...)` and `(?:...)`, alternation `|`,
// quantifiers `* + ? {n} {n,} {n,m}` (a trailing `?` for lazy is accepted:
// it changes what is captured, never whether the text matches), and the
// anchors `^` and `$`. Matching is on bytes.

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fabricbench {

class SchemaPattern {
 public:
  // Throws std::invalid_argument naming the pattern when it uses syntax
  // outside the subset or expands beyond 10,000 instructions.
  explicit SchemaPattern(std::string_view pattern);

  // True when the pattern matches somewhere in `text` (regex_search).
  [[nodiscard]] bool search(std::string_view text) const;

  struct Instruction {
    enum class Kind : std::uint8_t { byte_set, split, jump, begin, end, match } kind = Kind::match;
    int x = 0;  // byte_set: index into sets_; split: first choice; jump: target
    int y = 0;  // split: second choice
  };

 private:
  std::vector<Instruction> program_;
  std::vector<std::bitset<256>> sets_;
};

}  // namespace fabricbench
