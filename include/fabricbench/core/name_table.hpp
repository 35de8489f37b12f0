#pragma once
// Name tables: a closed set is an enum, and its names (in files, on the
// command line, in reports) come from one table that maps both ways.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace fabricbench {

template <typename Enum, std::size_t N>
using NameTable = std::array<std::pair<Enum, std::string_view>, N>;

// The name of `value`; "?" for a value outside the table.
template <typename Enum, std::size_t N>
constexpr std::string_view name_in(const NameTable<Enum, N>& table, Enum value) {
  for (const auto& [v, label] : table)
    if (v == value) return label;
  return "?";
}

// The value named exactly `text`, or nullopt.
template <typename Enum, std::size_t N>
constexpr std::optional<Enum> parse_in(const NameTable<Enum, N>& table, std::string_view text) {
  for (const auto& [v, label] : table)
    if (label == text) return v;
  return std::nullopt;
}

// "a, b or c": the names, for an error message.
template <typename Enum, std::size_t N>
std::string names_of(const NameTable<Enum, N>& table) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? " or " : ", ";
    out += table[i].second;
  }
  return out;
}

}  // namespace fabricbench
