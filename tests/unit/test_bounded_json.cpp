#include "fabricbench/core/bounded_json.hpp"

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "fabricbench/core/error.hpp"
#include "fabricbench/results/schema_validate.hpp"

namespace fabricbench {
namespace {

using json = nlohmann::json;

std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(IntegerValue, ChecksTheRangeInTheTargetType) {
  EXPECT_EQ(integer_value<int>(json(9223372036854775807LL)), std::nullopt);  // once wrapped to -1
  EXPECT_EQ(integer_value<int>(json(4294967297LL)), std::nullopt);           // once read as 1
  EXPECT_EQ(integer_value<std::size_t>(json(1e20)), std::nullopt);           // once read as 0
  EXPECT_EQ(integer_value<int>(json(4294967296.0)), std::nullopt);
  EXPECT_EQ(integer_value<std::uint64_t>(json(-1)), std::nullopt);
  EXPECT_EQ(integer_value<int>(json(2.5)), std::nullopt);
  EXPECT_EQ(integer_value<int>(json("7")), std::nullopt);
  EXPECT_EQ(integer_value<int>(json(2.0)), 2);  // JSON Schema's integer
  EXPECT_EQ(integer_value<int>(json(-2147483648LL)), -2147483648);
  EXPECT_EQ(integer_value<std::uint64_t>(json(18446744073709551615ULL)), 18446744073709551615ULL);
  EXPECT_EQ(integer_value<std::int64_t>(json(9223372036854775808.0)), std::nullopt);
  EXPECT_EQ(usage_error([] { (void)checked_integer<int>(json(1e20), "run/ranks", 1); }),
            "run/ranks: 1e+20 is not an integer from 1 to 2147483647");
}

TEST(ParseBoundedJson, RefusesDeepNestingWithThePath) {
  const std::string deep = R"({"a": [1, {"b": )" + std::string(100000, '[') + std::string(100000, ']') + "}]}";
  EXPECT_EQ(usage_error([&] {
              (void)parse_bounded_json(deep, "f.json");
            }).rfind("f.json: nested deeper than 64 levels at a/1/b/0/0/0/0/", 0),
            0U);
  const std::string ok = std::string(60, '[') + std::string(60, ']');
  EXPECT_NO_THROW((void)parse_bounded_json(ok, "f.json"));
}

TEST(ParseBoundedJson, EveryParserFailureNamesTheFile) {
  EXPECT_EQ(usage_error([] { (void)parse_bounded_json(R"({"x": 1e309})", "f.json"); }),
            "f.json: a number is out of range: number overflow parsing '1e309'");
  EXPECT_EQ(
      usage_error([] { (void)parse_bounded_json(R"({"x": )", "f.json"); }).rfind("f.json: truncated or not JSON: ", 0),
      0U);
}

TEST(ParseBoundedJson, MemoryIsBoundedByTheTextsSize) {
  // Two million empty objects in 6 MB of text would take 190 MB: refused at
  // the bound, which is 16 bytes per byte of text plus 16 MiB.
  std::string empties = "[{}";
  for (int i = 1; i < 2'000'000; ++i) empties += ",{}";
  empties += "]";
  const std::string error = usage_error([&] { (void)parse_bounded_json(empties, "e.json"); });
  EXPECT_EQ(error.rfind("e.json: its JSON would take more than 107 MiB of memory (16 bytes per byte of its 6000001 "
                        "bytes, plus 16 MiB)",
                        0),
            0U)
      << error;
  // What fabricbench writes stays well inside: the golden results, pretty
  // and compact, take at most 8 bytes per byte.
  for (const char* name : {"result.json", "run_a.json", "run_b.json"}) {
    std::ifstream in(std::string(FABRICBENCH_GOLDEN_DIR) + "/" + name);
    const std::string pretty((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const json doc = parse_bounded_json(pretty, name);
    const std::string compact = doc.dump();
    EXPECT_LE(json_memory_estimate(doc), 8 * compact.size()) << name;
    EXPECT_EQ(parse_bounded_json(compact, name), doc);
  }
  // Long strings and keys are charged for their characters, twice (the
  // capacity a string grown by doubling may keep).
  const json text = {{std::string(1000, 'k'), std::string(100000, 'v')}};
  EXPECT_GE(json_memory_estimate(text), 202000U);
  EXPECT_LE(json_memory_estimate(text), 3 * text.dump().size());
}

json schema_with(const json& property) { return json{{"type", "object"}, {"properties", {{"v", property}}}}; }

TEST(SchemaValidator, PatternsMatchLongStringsWithoutRecursion) {
  const SchemaValidator v(schema_with({{"type", "string"}, {"pattern", "^[0-9]+\\.[0-9]+\\.[0-9]+"}}));
  EXPECT_TRUE(v.validate({{"v", std::string(200000, '9') + ".0.0-rc"}}).empty());
  EXPECT_EQ(v.validate({{"v", std::string(200000, '9')}}).size(), 1U);
  const SchemaValidator alt(schema_with({{"type", "string"}, {"pattern", "^(X|NV[0-9]+|PIX|\\?)$"}}));
  for (const char* good : {"X", "NV12", "PIX", "?"}) EXPECT_TRUE(alt.validate({{"v", good}}).empty()) << good;
  for (const char* bad : {"", "NV", "PIXX", "x?", "NV1a"}) EXPECT_FALSE(alt.validate({{"v", bad}}).empty()) << bad;
  const SchemaValidator counted(schema_with({{"type", "string"}, {"pattern", "^[0-9]{4}-[0-9]{2}Z$"}}));
  EXPECT_TRUE(counted.validate({{"v", "2026-11Z"}}).empty());
  EXPECT_FALSE(counted.validate({{"v", "226-11Z"}}).empty());
  const SchemaValidator unanchored(schema_with({{"type", "string"}, {"pattern", "rank [0-9]+: "}}));
  EXPECT_TRUE(unanchored.validate({{"v", "at rank 12: x"}}).empty());
  EXPECT_THROW(SchemaValidator(schema_with({{"pattern", "(?=x)"}})), std::invalid_argument);
  EXPECT_THROW(SchemaValidator(schema_with({{"pattern", "a{3,1}"}})), std::invalid_argument);
}

TEST(SchemaValidator, UniqueItemsOfAHundredThousandIsQuickAndNamesTheFirstPair) {
  json items = json::array();
  for (int i = 0; i < 100000; ++i) items.push_back("t" + std::to_string(i));
  // A ratio, not a speed: the uniqueness check against a linear pass over
  // the same items (a minimum length) in the same process. n log n stays
  // within a small factor of it; the quadratic check it replaced took
  // thousands of times as long.
  const SchemaValidator linear(schema_with({{"type", "array"}, {"items", {{"minLength", 1}}}}));
  const SchemaValidator v(schema_with({{"type", "array"}, {"uniqueItems", true}}));
  const auto timed = [&items](const SchemaValidator& validator) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(validator.validate({{"v", items}}).empty());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double linear_s = timed(linear);
  const double unique_s = timed(v);
  EXPECT_LT(unique_s, 200 * linear_s + 0.5) << "linear " << linear_s << " s, unique " << unique_s << " s";
  items.push_back("t7");
  items.push_back("t5");
  const auto errors = v.validate({{"v", items}});
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].message, "items 5 and 100001 are equal (\"t5\")");
  // 1 and 1.0 are equal to JSON Schema.
  EXPECT_EQ(v.validate({{"v", json::parse("[[1], {\"a\": 2}, [1.0]]")}})[0].message, "items 0 and 2 are equal ([1])");
}

}  // namespace
}  // namespace fabricbench
