#pragma once
// Small text helpers that probes and records share.

#include <optional>
#include <string>
#include <string_view>

namespace fabricbench {

// `text` without leading and trailing white space.
std::string trim(std::string_view text);

// `text` as a decimal int, all of it; nullopt for anything else (a sign
// other than '-', spaces, a suffix, out of range).
std::optional<int> whole_int(std::string_view text);

// `text` with A-Z made a-z; every other byte as it is (no locale).
std::string lower_ascii(std::string_view text);

}  // namespace fabricbench
