// Strings that are bytes, not UTF-8 (host names, environment values, file
// names): written validly, listed, and read back to the same bytes.
#include "fabricbench/core/byte_strings.hpp"

#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fabricbench/core/bounded_json.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/core/json_layout.hpp"

namespace fabricbench {
namespace {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

const std::string bad_host = "node\xff\xc3";  // a lone 0xff and a truncated sequence
const std::string bad_name = "NCCL_\xfe/~X";  // a member name, with pointer escapes

TEST(ByteStrings, Utf8IsCheckedStrictly) {
  EXPECT_TRUE(is_utf8(""));
  EXPECT_TRUE(is_utf8("plain ascii"));
  EXPECT_TRUE(is_utf8("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));  // é, €, an emoji
  EXPECT_FALSE(is_utf8("\xff"));
  EXPECT_FALSE(is_utf8("\xc3"));              // truncated
  EXPECT_FALSE(is_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(is_utf8("\xe0\x80\xaf"));      // overlong
  EXPECT_FALSE(is_utf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(is_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_utf8("\x80"));              // a continuation alone
}

TEST(ByteStrings, EveryByteRoundTrips) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  const std::string text = bytes_as_text(all);
  EXPECT_TRUE(is_utf8(text));
  EXPECT_EQ(text_as_bytes(text), all);
  EXPECT_EQ(bytes_as_text("abc"), "abc");
  EXPECT_EQ(text_as_bytes("\xc4\x80"), std::nullopt);  // U+0100 is not a byte
  EXPECT_EQ(text_as_bytes("\xff"), std::nullopt);      // not UTF-8
}

TEST(ByteStrings, EncodedDocumentIsValidJsonAndDecodesToTheSameBytes) {
  ojson doc;
  doc["host"] = bad_host;
  doc["ok"] = "caf\xc3\xa9";
  doc["environment"] = {{bad_name, "a\xff"}, {"NCCL_DEBUG", "INFO"}};
  doc["list"] = ojson::array({"fine", "x\x80y"});
  doc["outer\xfa"] = {{"inner\xfb", {{"v", "\xfc"}}}};  // renamed inside renamed
  ojson encoded = doc;
  encode_byte_strings(encoded);
  const std::string text = encoded.dump();  // throws on invalid UTF-8: it must not
  json back = parse_bounded_json(text, "t");
  ASSERT_TRUE(back.contains("byte_strings"));
  decode_byte_strings(back, "t");
  EXPECT_FALSE(back.contains("byte_strings"));
  EXPECT_EQ(back["host"].get<std::string>(), bad_host);
  EXPECT_EQ(back["ok"].get<std::string>(), "caf\xc3\xa9");
  EXPECT_EQ(back["environment"][bad_name].get<std::string>(), "a\xff");
  EXPECT_EQ(back["environment"]["NCCL_DEBUG"].get<std::string>(), "INFO");
  EXPECT_EQ(back["list"][1].get<std::string>(), "x\x80y");
  EXPECT_EQ(back["outer\xfa"]["inner\xfb"]["v"].get<std::string>(), "\xfc");
}

TEST(ByteStrings, UtfEightDocumentsAreUnchanged) {
  ojson doc{{"a", "b"}, {"c", ojson::array({"\xc3\xa9"})}};
  const ojson before = doc;
  encode_byte_strings(doc);
  EXPECT_EQ(doc, before);
}

TEST(ByteStrings, ExchangesCarryBytes) {
  ojson record{{"host", bad_host}, {"environment", {{bad_name, "\xff"}}}};
  const json back = parse_exchange_text(exchange_text(record), "configuration");
  EXPECT_EQ(back["host"].get<std::string>(), bad_host);
  EXPECT_EQ(back["environment"][bad_name].get<std::string>(), "\xff");
}

TEST(ByteStrings, ListsThatDoNotFitTheDocumentAreRefused) {
  const auto refused = [](const std::string& text) {
    json doc = json::parse(text);
    try {
      decode_byte_strings(doc, "f.json");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused(R"({"a": 1, "byte_strings": {"values": ["/a"]}})"),
            "f.json: byte_strings: /a does not name a string");
  EXPECT_EQ(refused(R"({"a": "x", "byte_strings": {"values": ["/b"]}})"),
            "f.json: byte_strings: /b does not name a string");
  EXPECT_EQ(refused(R"({"a": "\u0100", "byte_strings": {"values": ["/a"]}})"),
            "f.json: byte_strings: /a holds a character above U+00FF, so it is not bytes");
  EXPECT_EQ(refused(R"({"a": "x", "byte_strings": {"values": ["a"]}})"),
            "f.json: byte_strings: a is not a JSON pointer");
  EXPECT_EQ(refused(R"({"a": "x", "byte_strings": {"values": [""]}})"),
            "f.json: byte_strings:  does not name a string");
  EXPECT_EQ(refused(R"({"\u00ff": 1, "\u00c3\u00bf": 2, "byte_strings": {"names": ["/\u00c3\u00bf"]}})"),
            "f.json: byte_strings: /\xc3\x83\xc2\xbf names a member twice");
}

TEST(ByteStrings, TheLayoutListsWhatItWroteAsBytesStreamedAndOnOneLineAlike) {
  ojson held;
  held["schema"] = "x";
  held["short"] = {{"host", bad_host}, {bad_name, 1}};                  // one line
  held["long"] = {{"host", bad_host}, {"pad", std::string(120, 'p')}};  // too long for one line
  held["hosts"] = ojson::array();
  for (int i = 0; i < 40; ++i) held["hosts"].push_back(i == 33 ? bad_host : "h" + std::to_string(i));  // packed
  held["nodes"] = ojson::array({nullptr});
  const std::vector<ojson> nodes{{{"host", "fine"}}, {{"host", bad_host}, {"config", {{bad_name, "\xff"}}}}};
  const std::vector<StreamedArray> streamed{{{"nodes"}, [&nodes](const auto& put) {
                                               for (const ojson& n : nodes) put(n);
                                             }}};
  std::ostringstream out;
  write_json_layout(held, out, streamed);
  const ojson written = ojson::parse(out.str());
  const std::vector<std::string> values{"/short/host", "/long/host", "/hosts/33", "/nodes/1/host",
                                        "/nodes/1/config/NCCL_\xc3\xbe~1~0X"};
  const std::vector<std::string> names{"/short/NCCL_\xc3\xbe~1~0X", "/nodes/1/config/NCCL_\xc3\xbe~1~0X"};
  EXPECT_EQ(written["byte_strings"]["values"].get<std::vector<std::string>>(), values);
  EXPECT_EQ(written["byte_strings"]["names"].get<std::vector<std::string>>(), names);
  EXPECT_EQ(written.back(), written["byte_strings"]);  // it closes the document
  json back = parse_bounded_json(out.str(), "t");
  decode_byte_strings(back, "t");
  EXPECT_EQ(back["hosts"][33].get<std::string>(), bad_host);
  EXPECT_EQ(back["nodes"][1]["config"][bad_name].get<std::string>(), "\xff");
  EXPECT_EQ(back["short"][bad_name].get<int>(), 1);
  EXPECT_EQ(back["long"]["host"].get<std::string>(), bad_host);
}

}  // namespace
}  // namespace fabricbench
