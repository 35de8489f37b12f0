#include "fabricbench/core/byte_strings.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fabricbench/core/bounded_json.hpp"
#include "fabricbench/core/error.hpp"

namespace fabricbench {
namespace {

// The length of the UTF-8 sequence at `text[i]`, 0 when it is not one
// (overlong forms, surrogates and code points above U+10FFFF included).
std::size_t sequence_at(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // overlong
    if (lead == 0xed) high = 0x9f;  // surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;   // overlong
    if (lead == 0xf4) high = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return length;
}

using Json = nlohmann::ordered_json;

void encode(Json& value, std::string& at, ByteStrings& found) {
  if (value.is_string()) {
    auto& text = value.get_ref<std::string&>();
    if (!is_utf8(text)) {
      text = bytes_as_text(text);
      found.values.push_back(at);
    }
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      const std::size_t mark = at.size();
      fmt::format_to(std::back_inserter(at), "/{}", i);
      encode(value[i], at, found);
      at.resize(mark);
    }
  } else if (value.is_object()) {
    bool renamed = false;
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::size_t mark = at.size();
      const bool bytes = !is_utf8(it.key());
      append_pointer_token(at, bytes ? bytes_as_text(it.key()) : it.key());
      encode(it.value(), at, found);
      if (bytes) {
        found.names.push_back(at);
        renamed = true;
      }
      at.resize(mark);
    }
    if (renamed) {  // the members again, in their order, under their new names
      Json out = Json::object();
      for (auto it = value.begin(); it != value.end(); ++it)
        out[is_utf8(it.key()) ? it.key() : bytes_as_text(it.key())] = std::move(it.value());
      value = std::move(out);
    }
  }
}

std::size_t depth_of(const std::string& pointer) {
  return static_cast<std::size_t>(std::count(pointer.begin(), pointer.end(), '/'));
}

}  // namespace

bool is_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_at(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string bytes_as_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x80) {
      out += c;
    } else {
      out += static_cast<char>(0xc0 | (b >> 6U));
      out += static_cast<char>(0x80 | (b & 0x3fU));
    }
  }
  return out;
}

std::optional<std::string> text_as_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_at(text, i);
    const auto lead = static_cast<unsigned char>(text[i]);
    if (n == 1) {
      out += text[i];
    } else if (n == 2 && lead <= 0xc3) {
      out += static_cast<char>(((lead & 0x03U) << 6U) | (static_cast<unsigned char>(text[i + 1]) & 0x3fU));
    } else {
      return std::nullopt;
    }
    i += n;
  }
  return out;
}

void append_pointer_token(std::string& pointer, std::string_view token) {
  pointer += '/';
  for (const char c : token) {
    if (c == '~') {
      pointer += "~0";
    } else if (c == '/') {
      pointer += "~1";
    } else {
      pointer += c;
    }
  }
}

nlohmann::ordered_json to_json(const ByteStrings& found) {
  Json out = Json::object();
  if (!found.values.empty()) out["values"] = found.values;
  if (!found.names.empty()) out["names"] = found.names;
  return out;
}

void encode_byte_strings(nlohmann::ordered_json& document) {
  ByteStrings found;
  std::string at;
  encode(document, at, found);
  if (!found.empty()) document[std::string(byte_strings_key)] = to_json(found);
}

void decode_byte_strings(nlohmann::json& document, const std::string& label) {
  const auto list = document.find(byte_strings_key);
  if (list == document.end()) return;
  const auto refuse = [&label](const std::string& pointer, const char* why) {
    return UsageError(fmt::format("{}: byte_strings: {} {}", label, pointer, why));
  };
  const auto pointers = [&](const char* key) {
    std::vector<std::string> out;
    if (const auto it = list->find(key); it != list->end() && it->is_array())
      for (const nlohmann::json& p : *it)
        if (p.is_string()) out.push_back(p.get<std::string>());
    return out;
  };
  const auto pointer_of = [&](const std::string& text) {
    try {
      return nlohmann::json::json_pointer(text);
    } catch (const nlohmann::json::exception&) {
      throw refuse(text, "is not a JSON pointer");
    }
  };
  const std::vector<std::string> values = pointers("values");
  std::vector<std::string> names = pointers("names");
  document.erase(list);
  for (const std::string& text : values) {
    const auto pointer = pointer_of(text);
    if (text.empty() || !document.contains(pointer) || !document.at(pointer).is_string())
      throw refuse(text, "does not name a string");
    auto& value = document.at(pointer).get_ref<std::string&>();
    const std::optional<std::string> bytes = text_as_bytes(value);
    if (!bytes) throw refuse(text, "holds a character above U+00FF, so it is not bytes");
    value = *bytes;
  }
  // The deepest first: a name's pointer spells its ancestors' names as
  // written, which a shallower rename would change.
  std::stable_sort(names.begin(), names.end(),
                   [](const std::string& a, const std::string& b) { return depth_of(a) > depth_of(b); });
  for (const std::string& text : names) {
    const auto pointer = pointer_of(text);
    if (text.empty() || !document.contains(pointer)) throw refuse(text, "does not name a member");
    nlohmann::json& parent = document.at(pointer.parent_pointer());
    if (!parent.is_object()) throw refuse(text, "does not name a member");
    const std::optional<std::string> bytes = text_as_bytes(pointer.back());
    if (!bytes) throw refuse(text, "holds a character above U+00FF, so it is not bytes");
    if (*bytes == pointer.back()) continue;
    if (parent.contains(*bytes)) throw refuse(text, "names a member twice");
    nlohmann::json moved = std::move(parent.at(pointer.back()));
    parent.erase(pointer.back());
    parent[*bytes] = std::move(moved);
  }
}

std::string exchange_text(nlohmann::ordered_json record) {
  encode_byte_strings(record);
  return record.dump();
}

nlohmann::json parse_exchange_text(std::string_view text, const std::string& label) {
  nlohmann::json record = parse_bounded_json(text, label);
  if (record.is_object()) decode_byte_strings(record, label);
  return record;
}

}  // namespace fabricbench
