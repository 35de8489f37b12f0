#include "fabricbench/model/schema_validate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "schema_pattern.hpp"

namespace fabricbench {
namespace {

using json = nlohmann::json;

const std::set<std::string>& known_keywords() {
  static const std::set<std::string> keywords{"$schema",
                                              "$id",
                                              "$ref",
                                              "title",
                                              "description",
                                              "definitions",
                                              "type",
                                              "enum",
                                              "const",
                                              "required",
                                              "properties",
                                              "additionalProperties",
                                              "items",
                                              "minItems",
                                              "maxItems",
                                              "uniqueItems",
                                              "minLength",
                                              "maxLength",
                                              "pattern",
                                              "minimum",
                                              "maximum",
                                              "exclusiveMinimum",
                                              "exclusiveMaximum",
                                              "allOf",
                                              "anyOf",
                                              "oneOf",
                                              "not",
                                              "default",
                                              "examples"};
  return keywords;
}

const json* resolve(const json& root, const std::string& ref) {
  if (ref.rfind('#', 0) != 0) return nullptr;
  const std::string pointer = ref.substr(1);
  try {
    const json& target = root.at(json::json_pointer(pointer));
    return &target;
  } catch (const json::exception&) {
    return nullptr;
  }
}

// Every schema reachable in `node` uses known keywords and resolvable refs.
using Patterns = std::map<std::string, SchemaPattern>;

void check_schema(const json& root, const json& node, const std::string& where, Patterns& patterns) {
  if (node.is_boolean()) return;
  if (!node.is_object()) throw std::invalid_argument(fmt::format("schema {}: not an object", where));
  for (const auto& [key, value] : node.items()) {
    if (!known_keywords().contains(key))
      throw std::invalid_argument(fmt::format("schema {}: unsupported keyword '{}'", where, key));
    if (key == "$ref" && (!value.is_string() || resolve(root, value.get<std::string>()) == nullptr))
      throw std::invalid_argument(fmt::format("schema {}: $ref {} does not resolve", where, value.dump()));
    if (key == "pattern") patterns.try_emplace(value.get<std::string>(), value.get<std::string>());
    if (key == "properties" || key == "definitions") {
      for (const auto& [name, sub] : value.items())
        check_schema(root, sub, fmt::format("{}/{}/{}", where, key, name), patterns);
    } else if (key == "additionalProperties" || key == "items" || key == "not") {
      check_schema(root, value, fmt::format("{}/{}", where, key), patterns);
    } else if (key == "allOf" || key == "anyOf" || key == "oneOf") {
      for (std::size_t i = 0; i < value.size(); ++i)
        check_schema(root, value[i], fmt::format("{}/{}/{}", where, key, i), patterns);
    }
  }
}

std::string join_path(const std::string& path, const std::string& step) {
  return path.empty() ? step : path + "/" + step;
}

std::string short_text(const json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

bool has_type(const json& value, const std::string& type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  if (type == "number") return value.is_number();
  if (type == "integer") {
    if (value.is_number_integer()) return true;
    // 2.0 is an integer to JSON Schema, as to python's jsonschema.
    if (value.is_number_float()) {
      const double d = value.get<double>();
      return std::isfinite(d) && std::floor(d) == d;
    }
  }
  return false;
}

// Equality as JSON Schema defines it: 1 and 1.0 are equal.
bool json_equal(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

// A text equal for values JSON Schema calls equal: numbers by value (1 and
// 1.0 alike), objects by sorted keys. Depth is bounded by the parser.
void canonical(const json& value, std::string& out) {
  if (value.is_number()) {
    const double d = value.get<double>();
    out += fmt::format("n{}", d == 0 ? 0.0 : d);  // -0 equals 0
    return;
  }
  if (value.is_array()) {
    out += '[';
    for (const json& item : value) {
      canonical(item, out);
      out += ',';
    }
    out += ']';
    return;
  }
  if (value.is_object()) {
    out += '{';
    for (const auto& [key, item] : value.items()) {
      out += json(key).dump();
      out += ':';
      canonical(item, out);
      out += ',';
    }
    out += '}';
    return;
  }
  out += value.dump();
}

// The first (i, j), i < j, of equal items, as a scan of every pair would
// find it, in n log n: sort the canonical texts, then take the equal run
// whose first index is lowest.
std::optional<std::pair<std::size_t, std::size_t>> first_equal_pair(const json& array) {
  std::vector<std::pair<std::string, std::size_t>> keyed;
  keyed.reserve(array.size());
  for (std::size_t i = 0; i < array.size(); ++i) {
    std::string text;
    canonical(array[i], text);
    keyed.emplace_back(std::move(text), i);
  }
  std::sort(keyed.begin(), keyed.end());
  std::optional<std::pair<std::size_t, std::size_t>> best;
  for (std::size_t k = 0; k + 1 < keyed.size(); ++k) {
    if (keyed[k].first != keyed[k + 1].first) continue;
    // Sorted pairs: within an equal run the indices ascend.
    if (!best || keyed[k].second < best->first) best = std::pair{keyed[k].second, keyed[k + 1].second};
    while (k + 1 < keyed.size() && keyed[k].first == keyed[k + 1].first) ++k;
  }
  return best;
}

class Run {
 public:
  Run(const json& root, const Patterns& patterns, std::size_t max_errors)
      : root_(root), patterns_(patterns), max_(max_errors) {}

  void check(const json& schema, const json& value, const std::string& path, std::vector<SchemaError>& errors) const {
    if (errors.size() >= max_) return;
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) errors.push_back({path, "nothing is allowed here"});
      return;
    }
    if (const auto ref = schema.find("$ref"); ref != schema.end()) {
      // In draft-07 a $ref replaces its siblings.
      check(*resolve(root_, ref->get<std::string>()), value, path, errors);
      return;
    }
    if (const auto t = schema.find("type"); t != schema.end()) {
      bool ok = false;
      std::string expected;
      if (t->is_string()) {
        ok = has_type(value, t->get<std::string>());
        expected = t->get<std::string>();
      } else {
        for (const json& one : *t) {
          ok = ok || has_type(value, one.get<std::string>());
          expected += (expected.empty() ? "" : " or ") + one.get<std::string>();
        }
      }
      if (!ok) {
        errors.push_back({path, fmt::format("{} is not of type {}", short_text(value), expected)});
        return;  // the other keywords would only repeat the mismatch
      }
    }
    if (const auto e = schema.find("enum"); e != schema.end()) {
      bool found = false;
      for (const json& option : *e) found = found || json_equal(option, value);
      if (!found) errors.push_back({path, fmt::format("{} is not one of {}", short_text(value), short_text(*e))});
    }
    if (const auto c = schema.find("const"); c != schema.end() && !json_equal(*c, value))
      errors.push_back({path, fmt::format("{} was expected, not {}", c->dump(), short_text(value))});
    if (value.is_number()) check_number(schema, value, path, errors);
    if (value.is_string()) check_string(schema, value, path, errors);
    if (value.is_array()) check_array(schema, value, path, errors);
    if (value.is_object()) check_object(schema, value, path, errors);
    check_combinators(schema, value, path, errors);
  }

 private:
  void check_number(const json& schema, const json& value, const std::string& path,
                    std::vector<SchemaError>& errors) const {
    const double v = value.get<double>();
    if (const auto m = schema.find("minimum"); m != schema.end() && v < m->get<double>())
      errors.push_back({path, fmt::format("{} is less than the minimum {}", value.dump(), m->dump())});
    if (const auto m = schema.find("maximum"); m != schema.end() && v > m->get<double>())
      errors.push_back({path, fmt::format("{} is more than the maximum {}", value.dump(), m->dump())});
    if (const auto m = schema.find("exclusiveMinimum"); m != schema.end() && v <= m->get<double>())
      errors.push_back({path, fmt::format("{} is not above {}", value.dump(), m->dump())});
    if (const auto m = schema.find("exclusiveMaximum"); m != schema.end() && v >= m->get<double>())
      errors.push_back({path, fmt::format("{} is not below {}", value.dump(), m->dump())});
  }

  void check_string(const json& schema, const json& value, const std::string& path,
                    std::vector<SchemaError>& errors) const {
    const std::string& s = value.get_ref<const std::string&>();
    if (const auto m = schema.find("minLength"); m != schema.end() && s.size() < m->get<std::size_t>())
      errors.push_back({path, fmt::format("{} is shorter than {} characters", short_text(value), m->dump())});
    if (const auto m = schema.find("maxLength"); m != schema.end() && s.size() > m->get<std::size_t>())
      errors.push_back({path, fmt::format("{} is longer than {} characters", short_text(value), m->dump())});
    if (const auto p = schema.find("pattern"); p != schema.end()) {
      if (!patterns_.at(p->get<std::string>()).search(s))
        errors.push_back({path, fmt::format("{} does not match '{}'", short_text(value), p->get<std::string>())});
    }
  }

  void check_array(const json& schema, const json& value, const std::string& path,
                   std::vector<SchemaError>& errors) const {
    if (const auto m = schema.find("minItems"); m != schema.end() && value.size() < m->get<std::size_t>())
      errors.push_back({path, fmt::format("has {} items, fewer than the minimum {}", value.size(), m->dump())});
    if (const auto m = schema.find("maxItems"); m != schema.end() && value.size() > m->get<std::size_t>())
      errors.push_back({path, fmt::format("has {} items, more than the maximum {}", value.size(), m->dump())});
    if (const auto u = schema.find("uniqueItems"); u != schema.end() && u->get<bool>()) {
      if (const auto pair = first_equal_pair(value))
        errors.push_back({path, fmt::format("items {} and {} are equal ({})", pair->first, pair->second,
                                            short_text(value[pair->first]))});
    }
    if (const auto items = schema.find("items"); items != schema.end()) {
      for (std::size_t i = 0; i < value.size(); ++i) {
        const json& sub = items->is_array() ? (i < items->size() ? (*items)[i] : json(true)) : *items;
        check(sub, value[i], join_path(path, std::to_string(i)), errors);
      }
    }
  }

  void check_object(const json& schema, const json& value, const std::string& path,
                    std::vector<SchemaError>& errors) const {
    if (const auto r = schema.find("required"); r != schema.end()) {
      for (const json& key : *r)
        if (!value.contains(key.get<std::string>()))
          errors.push_back({path, fmt::format("'{}' is a required property", key.get<std::string>())});
    }
    const auto props = schema.find("properties");
    const auto additional = schema.find("additionalProperties");
    for (const auto& [key, sub] : value.items()) {
      if (props != schema.end() && props->contains(key)) {
        check((*props)[key], sub, join_path(path, key), errors);
      } else if (additional != schema.end()) {
        if (additional->is_boolean() && !additional->get<bool>())
          errors.push_back({path, fmt::format("additional property '{}' is not allowed", key)});
        else
          check(*additional, sub, join_path(path, key), errors);
      }
    }
  }

  void check_combinators(const json& schema, const json& value, const std::string& path,
                         std::vector<SchemaError>& errors) const {
    const auto passes = [&](const json& sub) {
      std::vector<SchemaError> scratch;
      Run(root_, patterns_, 1).check(sub, value, path, scratch);
      return scratch.empty();
    };
    if (const auto all = schema.find("allOf"); all != schema.end())
      for (const json& sub : *all) check(sub, value, path, errors);
    if (const auto any = schema.find("anyOf"); any != schema.end()) {
      bool ok = false;
      for (const json& sub : *any) ok = ok || passes(sub);
      if (!ok)
        errors.push_back({path, fmt::format("{} is not valid under any of the given schemas", short_text(value))});
    }
    if (const auto one = schema.find("oneOf"); one != schema.end()) {
      int matched = 0;
      for (const json& sub : *one) matched += passes(sub) ? 1 : 0;
      if (matched == 0)
        errors.push_back({path, fmt::format("{} is not valid under any of the given schemas", short_text(value))});
      else if (matched > 1)
        errors.push_back(
            {path, fmt::format("{} is valid under more than one of the given schemas", short_text(value))});
    }
    if (const auto n = schema.find("not"); n != schema.end() && passes(*n))
      errors.push_back({path, fmt::format("{} should not be valid under {}", short_text(value), short_text(*n))});
  }

  const json& root_;
  const Patterns& patterns_;
  std::size_t max_;
};

}  // namespace

SchemaValidator::SchemaValidator(nlohmann::json schema)
    : schema_(std::move(schema)), patterns_(std::make_shared<Patterns>()) {
  check_schema(schema_, schema_, "#", *patterns_);
}

std::vector<SchemaError> SchemaValidator::validate(const nlohmann::json& document, std::size_t max_errors) const {
  std::vector<SchemaError> errors;
  Run(schema_, *patterns_, max_errors).check(schema_, document, "", errors);
  if (errors.size() > max_errors) errors.resize(max_errors);
  return errors;
}

}  // namespace fabricbench
