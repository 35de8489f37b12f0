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

// A price or a cost as people read it: whole above 100, else 4 significant
// digits, never an exponent; after the currency code when there is one
// ("USD 0.4167", "1250").
std::string money_text(double value, std::string_view currency = {});

}  // namespace fabricbench
