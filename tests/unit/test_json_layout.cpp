// The layout of written JSON files, and the bounded parser that reads them
// back: same document both ways, in linear time.
#include "fabricbench/core/json_layout.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fabricbench/core/bounded_json.hpp"
#include "fabricbench/core/error.hpp"

namespace fabricbench {
namespace {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

std::string laid_out(const ojson& doc) {
  std::ostringstream out;
  write_json_layout(doc, out);
  return out.str();
}

TEST(JsonLayout, ScalarsOnALineWhenTheyFitNestedContainersIndented) {
  ojson doc;
  doc["schema"] = "fabricbench.result/1";
  doc["link"] = {{"from", 0}, {"to", 1}, {"bandwidth_gbs", 200.5}, {"latency_us", 5.25}};
  doc["empty"] = ojson::object();
  doc["none"] = ojson::array();
  doc["nested"] = ojson::array({ojson::array({1, 2}), ojson{{"a", nullptr}, {"b", true}}});
  EXPECT_EQ(laid_out(doc),
            "{\n"
            "  \"schema\": \"fabricbench.result/1\",\n"
            "  \"link\": {\"from\": 0, \"to\": 1, \"bandwidth_gbs\": 200.5, \"latency_us\": 5.25},\n"
            "  \"empty\": {},\n"
            "  \"none\": [],\n"
            "  \"nested\": [\n"
            "    [1, 2],\n"
            "    {\"a\": null, \"b\": true}\n"
            "  ]\n"
            "}\n");
}

TEST(JsonLayout, LongScalarArraysArePackedLongObjectsGoOneMemberALine) {
  ojson doc;
  doc["ranks"] = ojson::array();
  for (int i = 0; i < 40; ++i) doc["ranks"].push_back(8);
  doc["host"] = {{"hostname", std::string(60, 'h')}, {"cpu_model", std::string(50, 'c')}};
  const std::string text = laid_out(doc);
  EXPECT_EQ(
      text,
      "{\n"
      "  \"ranks\": [\n"
      "    8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,\n"
      "    8, 8, 8, 8, 8, 8\n"
      "  ],\n"
      "  \"host\": {\n"
      "    \"hostname\": \"" +
          std::string(60, 'h') +
          "\",\n"
          "    \"cpu_model\": \"" +
          std::string(50, 'c') +
          "\"\n"
          "  }\n"
          "}\n");
}

TEST(JsonLayout, ScalarsAreDumpsOwnText) {
  // Numbers, escapes, UTF-8 and non-finite values, each written as dump()
  // writes it, alone and inside a one-line container.
  const ojson values =
      ojson::array({0.1, 1e-7, 1e300, -0.0, 3.0, 2.5e-310, std::numeric_limits<double>::quiet_NaN(),
                    std::numeric_limits<double>::infinity(), -9223372036854775807LL - 1, 18446744073709551615ULL,
                    "quote \" and \\ and \n", "\xc3\xa9t\xc3\xa9", "", nullptr, false});
  for (const ojson& v : values) {
    EXPECT_EQ(laid_out(v), v.dump() + "\n");
    EXPECT_EQ(laid_out(ojson::array({v})), "[" + v.dump() + "]\n");
    ojson keyed;
    keyed["k\t\xc3\xa9"] = v;
    EXPECT_EQ(laid_out(keyed), "{" + ojson("k\t\xc3\xa9").dump() + ": " + v.dump() + "}\n");
  }
  // Invalid UTF-8 is written as bytes and listed (test_byte_strings.cpp),
  // which only an object can do.
  EXPECT_THROW(laid_out(ojson::array({"bad \xff byte"})), SystemError);
  EXPECT_EQ(laid_out(ojson{{"k", "bad \xff byte"}}),
            "{\n  \"k\": \"bad \xc3\xbf byte\",\n  \"byte_strings\": {\n    \"values\": [\"/k\"]\n  }\n}\n");
}

TEST(JsonLayout, ReadsBackAsTheSameDocument) {
  ojson doc;
  for (int n = 0; n < 30; ++n) {
    ojson node;
    node["host"] = "node" + std::to_string(n);
    node["links"] = ojson::array();
    for (int l = 0; l < n % 7; ++l) node["links"].push_back({{"link", l}, {"active", l % 2 == 0}, {"gbs", l * 1.5}});
    node["matrix"] = ojson::array({ojson::array({"X", "NV18"}), ojson::array({"NV18", "X"})});
    node["numbers"] = ojson::array();
    for (int i = 0; i < n * 3; ++i) node["numbers"].push_back(i * 0.001);
    doc["nodes"].push_back(node);
  }
  EXPECT_EQ(ojson::parse(laid_out(doc)), doc);
  EXPECT_EQ(parse_bounded_json(laid_out(doc), "f.json"), json::parse(doc.dump()));
}

TEST(JsonLayout, StreamedArraysAreLaidOutAsIfTheDocumentHeldThem) {
  const ojson placeholder = ojson::array({nullptr});
  const ojson links = ojson::array({{{"from", 0}, {"to", 1}}, {{"from", 1}, {"to", 0}}});
  const auto stream_links = [&links](const auto& put) {
    for (const ojson& link : links) put(link);
  };
  ojson whole;
  whole["pairs"] = {{"bytes", 8}, {"links", links}};
  whole["other"] = {{"links", links}};  // the same key elsewhere: not streamed
  ojson held = whole;
  held["pairs"]["links"] = placeholder;
  const std::vector<StreamedArray> streamed{{{"pairs", "links"}, stream_links}};
  std::ostringstream out;
  write_json_layout(held, out, streamed);
  EXPECT_EQ(out.str(), laid_out(whole));
  // Nothing streamed: "[]" in its place, the same document (the parent was
  // laid out for a non-empty array, so callers stream only those).
  whole["pairs"]["links"] = ojson::array();
  std::ostringstream none;
  write_json_layout(held, none, std::vector<StreamedArray>{{{"pairs", "links"}, [](const auto&) {}}});
  EXPECT_NE(none.str().find("\"links\": []"), std::string::npos);
  EXPECT_EQ(ojson::parse(none.str()), whole);
}

TEST(ParseBoundedJson, BuildsWhatJsonParseBuilds) {
  const std::string text =
      R"({"a": [1, -2, 3.5, "x", null, true, {"b": []}, [[]]], "c": {"d": {"e": 18446744073709551615}},)"
      R"( "dup": 1, "dup": 2, "u": "\u00e9\n"})";
  EXPECT_EQ(parse_bounded_json(text, "f.json"), json::parse(text));
  EXPECT_EQ(parse_bounded_json(text, "f.json")["dup"], 2);  // the last value wins, as in json::parse
  for (const char* scalar : {"7", "\"s\"", "null", "[]", "{}"})
    EXPECT_EQ(parse_bounded_json(scalar, "f.json"), json::parse(scalar)) << scalar;
}

TEST(ParseBoundedJson, AnArrayOfObjectsLoadsInLinearTime) {
  // A ratio, not a speed: the bounded parser against json::parse on the same
  // 100,000 objects in the same process. The parser callback it replaced
  // rescanned the array at every object's end (100,000 x 50,000 steps).
  std::string text = "[";
  for (int i = 0; i < 100000; ++i) text += (i ? "," : "") + std::string(R"({"from": 1, "to": 2, "gbs": 3.5})");
  text += "]";
  const auto timed = [&text](const std::function<json()>& parse) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(parse().size(), 100000U);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double plain_s = timed([&text] { return json::parse(text); });
  const double bounded_s = timed([&text] { return parse_bounded_json(text, "f.json"); });
  EXPECT_LT(bounded_s, 10 * plain_s + 0.5) << "json::parse " << plain_s << " s, bounded " << bounded_s << " s";
}

}  // namespace
}  // namespace fabricbench
