#pragma once
// Host names, environment values, file names and strings probed from /proc
// and sysfs are bytes; JSON strings are UTF-8. A string that is not valid
// UTF-8 is written with each of its bytes as the code point of the same
// value (U+0000..U+00FF, as Latin-1 reads them), and its place is listed in
// the document's "byte_strings" member as JSON pointers (RFC 6901) into the
// document as written: "values" for strings, "names" for member names. A
// reader maps the code points of each listed string back to its bytes; one
// that ignores the list still reads valid, printable text. Lossless, and
// nothing that is already UTF-8 changes.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace fabricbench {

inline constexpr std::string_view byte_strings_key = "byte_strings";

bool is_utf8(std::string_view text);
// Each byte of `bytes` as the code point of its value, in UTF-8.
std::string bytes_as_text(std::string_view bytes);
// The inverse: nullopt when `text` is not UTF-8 or holds a code point
// above U+00FF.
std::optional<std::string> text_as_bytes(std::string_view text);
// `token` escaped for a JSON pointer (~ as ~0, / as ~1), appended to `pointer`
// after a '/'.
void append_pointer_token(std::string& pointer, std::string_view token);

// The places of the strings written as bytes.
struct ByteStrings {
  std::vector<std::string> values;
  std::vector<std::string> names;
  [[nodiscard]] bool empty() const { return values.empty() && names.empty(); }
};
nlohmann::ordered_json to_json(const ByteStrings& found);

// `document` (an object) with every string and member name that is not
// UTF-8 written as above and listed under "byte_strings".
void encode_byte_strings(nlohmann::ordered_json& document);
// The listed strings back to their bytes, and the list removed. Throws
// UsageError ("LABEL: byte_strings: ...") when an entry does not name a
// string of the document or holds a code point above U+00FF.
void decode_byte_strings(nlohmann::json& document, const std::string& label);

// For the records ranks send one another: `record` (an object) as text that
// holds any bytes, and back (parse_bounded_json, then decode_byte_strings).
std::string exchange_text(nlohmann::ordered_json record);
nlohmann::json parse_exchange_text(std::string_view text, const std::string& label);

}  // namespace fabricbench
