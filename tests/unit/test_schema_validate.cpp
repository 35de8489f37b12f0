#include "fabricbench/results/schema_validate.hpp"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace fabricbench {
namespace {

using json = nlohmann::json;

std::vector<std::string> lines(const std::vector<SchemaError>& errors) {
  std::vector<std::string> out;
  out.reserve(errors.size());
  for (const SchemaError& e : errors) out.push_back(e.path + ": " + e.message);
  return out;
}

std::string refusal(const char* schema) {
  try {
    SchemaValidator{json::parse(schema)};
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

// A tree whose nodes refer to their own definition: the $ref is compiled
// once and the check follows it as deep as the document goes.
const char* const tree_schema = R"({
  "definitions": {"node": {
    "type": "object", "required": ["name"], "additionalProperties": false,
    "properties": {"name": {"type": "string", "minLength": 1},
                   "kids": {"type": "array", "items": {"$ref": "#/definitions/node"}}}}},
  "$ref": "#/definitions/node"})";

TEST(SchemaValidate, RecursiveSchemaChecksANestedDocumentAtEveryDepth) {
  const SchemaValidator v(json::parse(tree_schema));
  json deep = {{"name", "leaf"}};
  for (int i = 0; i < 50; ++i) deep = {{"name", "n" + std::to_string(i)}, {"kids", json::array({deep})}};
  EXPECT_TRUE(v.validate(deep).empty());
  const json doc = json::parse(R"({"name": "root", "kids": [
      {"name": "a"},
      {"name": "b", "kids": [{"name": "c", "kids": [{"name": 5}, {"name": ""}, {"name": "d", "x": 1}]}]}]})");
  EXPECT_EQ(lines(v.validate(doc)), (std::vector<std::string>{
                                        "kids/1/kids/0/kids/0/name: 5 is not of type string",
                                        "kids/1/kids/0/kids/1/name: \"\" is shorter than 1 characters",
                                        "kids/1/kids/0/kids/2: additional property 'x' is not allowed",
                                    }));
  // The whole document as a $ref target, from inside itself.
  const SchemaValidator self(
      json::parse(R"({"type": ["object", "integer"], "additionalProperties": {"$ref": "#"}, "maximum": 3})"));
  EXPECT_EQ(lines(self.validate(json::parse(R"({"a": {"b": {"c": 4, "d": "x"}}})"))),
            (std::vector<std::string>{"a/b/c: 4 is more than the maximum 3",
                                      "a/b/d: \"x\" is not of type object or integer"}));
}

TEST(SchemaValidate, ErrorPathsNameEveryMemberAndItemOnTheWay) {
  const SchemaValidator v(json::parse(R"({
    "type": "object",
    "properties": {"records": {"type": "array", "items": {
      "type": "object",
      "properties": {"ranks": {"type": "array", "items": {"type": "array", "items": {
        "type": "object", "properties": {"gbs": {"type": "number", "minimum": 0}}}}}}}}},
    "additionalProperties": {"type": "object", "additionalProperties": {"type": "integer"}}})"));
  const json doc = json::parse(R"({
    "records": [{"ranks": []}, {"ranks": [[{"gbs": 1}], [{"gbs": 2}, {"gbs": -1}]]}],
    "extra": {"k": "v"},
    "": {"m": "w"}})");
  // Members in the document's key order ("" < "extra" < "records"). A path
  // starting with an empty member name does not show that name.
  EXPECT_EQ(lines(v.validate(doc)), (std::vector<std::string>{
                                        "m: \"w\" is not of type integer",
                                        "extra/k: \"v\" is not of type integer",
                                        "records/1/ranks/1/1/gbs: -1 is less than the minimum 0",
                                    }));
  EXPECT_EQ(lines(v.validate(json::parse(R"({"x": {"": {"": 1}, "y": 1.5}})"))),
            (std::vector<std::string>{"x/: {\"\":1} is not of type integer", "x/y: 1.5 is not of type integer"}));
  EXPECT_EQ(lines(v.validate(json::parse("[]"))), (std::vector<std::string>{": [] is not of type object"}));
}

TEST(SchemaValidate, ACopyWorksAfterTheOriginalIsGone) {
  auto original = std::make_unique<SchemaValidator>(json::parse(R"({
    "definitions": {"id": {"type": "string", "pattern": "^r[0-9]+$"}},
    "type": "array", "items": {"$ref": "#/definitions/id"}})"));
  SchemaValidator copy = *original;
  SchemaValidator assigned(json::parse("true"));
  assigned = *original;
  original.reset();
  const json doc = json::parse(R"(["r1", "r22", "x3"])");
  const std::vector<std::string> expected{"2: \"x3\" does not match '^r[0-9]+$'"};
  EXPECT_EQ(lines(copy.validate(doc)), expected);
  EXPECT_EQ(lines(assigned.validate(doc)), expected);
}

TEST(SchemaValidate, RequiredAndAdditionalPropertiesMessagesInOrder) {
  const SchemaValidator v(json::parse(R"({
    "type": "object", "required": ["zeta", "alpha", "mid"], "additionalProperties": false,
    "properties": {"alpha": {"type": "integer"}, "mid": {"type": "integer"}, "zeta": {"type": "integer"}}})"));
  // required in the schema's order, then members in the document's order.
  EXPECT_EQ(lines(v.validate(json::parse(R"({"mid": "s", "b": 1, "a": 2})"))),
            (std::vector<std::string>{
                ": 'zeta' is a required property",
                ": 'alpha' is a required property",
                ": additional property 'a' is not allowed",
                ": additional property 'b' is not allowed",
                "mid: \"s\" is not of type integer",
            }));
  const SchemaValidator nothing(json::parse(R"({"properties": {"a": false}, "items": false})"));
  EXPECT_EQ(lines(nothing.validate(json::parse(R"({"a": 1, "b": 2})"))),
            (std::vector<std::string>{"a: nothing is allowed here"}));
  EXPECT_EQ(lines(nothing.validate(json::parse("[1, 2]"))),
            (std::vector<std::string>{"0: nothing is allowed here", "1: nothing is allowed here"}));
}

TEST(SchemaValidate, MaxErrorsCutsInDocumentOrder) {
  const SchemaValidator v(json::parse(R"({"type": "object", "required": ["a", "b", "c"],
    "additionalProperties": {"type": "array", "items": {"type": "integer", "minimum": 0}}})"));
  const json doc = json::parse(R"({"x": [-1, "s", 2, -3], "y": [true]})");
  const std::vector<std::string> all{
      ": 'a' is a required property",       ": 'b' is a required property",      ": 'c' is a required property",
      "x/0: -1 is less than the minimum 0", "x/1: \"s\" is not of type integer", "x/3: -3 is less than the minimum 0",
      "y/0: true is not of type integer",
  };
  EXPECT_EQ(lines(v.validate(doc, 100)), all);
  EXPECT_EQ(lines(v.validate(doc)), all);  // ten by default
  for (std::size_t cut = 0; cut <= all.size(); ++cut)
    EXPECT_EQ(lines(v.validate(doc, cut)), std::vector<std::string>(all.begin(), all.begin() + cut)) << cut;
}

TEST(SchemaValidate, RefusesBadSchemasWhenBuilt) {
  EXPECT_EQ(refusal(R"({"properties": {"a": {"format": "date"}}})"),
            "schema #/properties/a: unsupported keyword 'format'");
  EXPECT_EQ(refusal(R"({"items": {"$ref": "#/definitions/none"}})"),
            "schema #/items: $ref \"#/definitions/none\" does not resolve");
  EXPECT_EQ(refusal(R"({"items": [{"type": "integer"}]})"), "schema #/items: not an object");
  // $refs that lead only to each other never reach a keyword to check.
  EXPECT_NE(refusal(R"({"definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}},
                        "properties": {"x": {"$ref": "#/definitions/a"}}})")
                .find("refers back to itself"),
            std::string::npos);
  EXPECT_EQ(refusal(tree_schema), "(accepted)");
}

}  // namespace
}  // namespace fabricbench
