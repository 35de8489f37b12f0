#include "fabricbench/results/schema_validate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "fabricbench/results/detail/schema_pattern.hpp"

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

std::string short_text(const json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
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

}  // namespace

namespace schema_detail {

// One schema object (or boolean schema) as `Run::check` needs it: every
// keyword looked up, parsed and worded once, when the validator is built.
struct Node {
  struct Bound {
    double limit = 0;
    std::string text;  // the keyword's value as the schema wrote it
  };
  struct Count {
    std::size_t limit = 0;
    std::string text;
  };

  bool is_boolean = false;  // `true` or `false` as a whole schema
  bool boolean = true;
  bool has_type = false;
  std::uint8_t types = 0;  // type_bit()s of the named types
  std::string expected;    // "string or null"
  bool has_enum = false;
  std::vector<json> enum_values;
  std::string enum_text;
  std::optional<json> const_value;
  std::string const_text;
  std::optional<Bound> minimum, maximum, exclusive_minimum, exclusive_maximum;
  std::optional<Count> min_length, max_length, min_items, max_items;
  const SchemaPattern* pattern = nullptr;
  std::string pattern_text;
  bool unique_items = false;
  bool has_items = false;
  bool tuple_items = false;  // items is a list: one schema per position, anything after
  const Node* items = nullptr;
  std::vector<const Node*> item_tuple;
  std::vector<std::string> required;
  std::vector<std::pair<std::string, const Node*>> properties;  // ascending by key
  bool no_additional = false;                                   // additionalProperties: false
  const Node* additional = nullptr;                             // additionalProperties as a schema
  std::vector<const Node*> all_of, any_of, one_of;
  bool has_any_of = false;
  bool has_one_of = false;
  const Node* not_schema = nullptr;
  std::string not_text;
  // Whether any keyword of a kind is present, so most values skip most kinds.
  bool number_checks = false, string_checks = false, array_checks = false, object_checks = false, combinators = false;
};

struct Compiled {
  Patterns patterns;
  std::deque<Node> nodes;  // stable addresses: nodes point at each other, cycles included
  const Node* root = nullptr;
};

}  // namespace schema_detail

namespace {

using schema_detail::Compiled;
using schema_detail::Node;

enum TypeBit : std::uint8_t {
  type_object = 1U << 0U,
  type_array = 1U << 1U,
  type_string = 1U << 2U,
  type_boolean = 1U << 3U,
  type_null = 1U << 4U,
  type_number = 1U << 5U,
  type_integer = 1U << 6U,
};

// 0 for a name that is not a JSON Schema type: no value has it.
std::uint8_t type_bit(const std::string& type) {
  if (type == "object") return type_object;
  if (type == "array") return type_array;
  if (type == "string") return type_string;
  if (type == "boolean") return type_boolean;
  if (type == "null") return type_null;
  if (type == "number") return type_number;
  if (type == "integer") return type_integer;
  return 0;
}

// Every type `value` has, as type_bit()s.
std::uint8_t types_of(const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      return type_object;
    case json::value_t::array:
      return type_array;
    case json::value_t::string:
      return type_string;
    case json::value_t::boolean:
      return type_boolean;
    case json::value_t::null:
      return type_null;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return type_number | type_integer;
    case json::value_t::number_float: {
      // 2.0 is an integer to JSON Schema, as to python's jsonschema.
      const double d = value.get<double>();
      return std::isfinite(d) && std::floor(d) == d ? type_number | type_integer : type_number;
    }
    default:
      return 0;
  }
}

// Builds the nodes, reading each keyword as the uncompiled check read it
// (find, range-for, get), so every schema check_schema accepts means the same.
class Compiler {
 public:
  Compiler(const json& root, Compiled& out) : root_(root), out_(out) {
    accept_ = &out_.nodes.emplace_back();
    accept_->is_boolean = true;
    reject_ = &out_.nodes.emplace_back();
    reject_->is_boolean = true;
    reject_->boolean = false;
  }

  const Node* compile(const json& schema, const std::string& where) {
    if (schema.is_boolean()) return schema.get<bool>() ? accept_ : reject_;
    if (const auto known = done_.find(&schema); known != done_.end()) {
      if (known->second == nullptr)
        throw std::invalid_argument(
            fmt::format("schema {}: $ref {} refers back to itself", where, schema.find("$ref")->dump()));
      return known->second;
    }
    if (const auto ref = schema.find("$ref"); ref != schema.end()) {
      // In draft-07 a $ref replaces its siblings: the node is the target's.
      const json* target = ref->is_string() ? resolve(root_, ref->get<std::string>()) : nullptr;
      if (target == nullptr)
        throw std::invalid_argument(fmt::format("schema {}: $ref {} does not resolve", where, ref->dump()));
      done_[&schema] = nullptr;  // a chain of $refs only, back to here, would never reach a keyword
      const Node* node = compile(*target, ref->get<std::string>());
      done_[&schema] = node;
      return node;
    }
    Node& node = out_.nodes.emplace_back();
    done_[&schema] = &node;  // before the children, so a recursive schema refers to this node
    compile_type(schema, node);
    if (const auto e = schema.find("enum"); e != schema.end()) {
      node.has_enum = true;
      for (const json& option : *e) node.enum_values.push_back(option);
      node.enum_text = short_text(*e);
    }
    if (const auto c = schema.find("const"); c != schema.end()) {
      node.const_value = *c;
      node.const_text = c->dump();
    }
    compile_number(schema, node);
    compile_string(schema, node);
    compile_array(schema, node, where);
    compile_object(schema, node, where);
    compile_combinators(schema, node, where);
    return &node;
  }

 private:
  static void compile_type(const json& schema, Node& node) {
    const auto t = schema.find("type");
    if (t == schema.end()) return;
    node.has_type = true;
    if (t->is_string()) {
      node.types = type_bit(t->get<std::string>());
      node.expected = t->get<std::string>();
      return;
    }
    for (const json& one : *t) {
      node.types |= type_bit(one.get<std::string>());
      node.expected += (node.expected.empty() ? "" : " or ") + one.get<std::string>();
    }
  }

  static void compile_number(const json& schema, Node& node) {
    const auto bound = [&](const char* keyword, std::optional<Node::Bound>& out) {
      if (const auto m = schema.find(keyword); m != schema.end()) {
        out = Node::Bound{m->get<double>(), m->dump()};
        node.number_checks = true;
      }
    };
    bound("minimum", node.minimum);
    bound("maximum", node.maximum);
    bound("exclusiveMinimum", node.exclusive_minimum);
    bound("exclusiveMaximum", node.exclusive_maximum);
  }

  static void count(const json& schema, const char* keyword, std::optional<Node::Count>& out, bool& present) {
    if (const auto m = schema.find(keyword); m != schema.end()) {
      out = Node::Count{m->get<std::size_t>(), m->dump()};
      present = true;
    }
  }

  void compile_string(const json& schema, Node& node) {
    count(schema, "minLength", node.min_length, node.string_checks);
    count(schema, "maxLength", node.max_length, node.string_checks);
    if (const auto p = schema.find("pattern"); p != schema.end()) {
      node.pattern_text = p->get<std::string>();
      node.pattern = &out_.patterns.try_emplace(node.pattern_text, node.pattern_text).first->second;
      node.string_checks = true;
    }
  }

  void compile_array(const json& schema, Node& node, const std::string& where) {
    count(schema, "minItems", node.min_items, node.array_checks);
    count(schema, "maxItems", node.max_items, node.array_checks);
    if (const auto u = schema.find("uniqueItems"); u != schema.end()) {
      node.unique_items = u->get<bool>();
      node.array_checks = true;
    }
    if (const auto items = schema.find("items"); items != schema.end()) {
      node.has_items = true;
      node.array_checks = true;
      if (items->is_array()) {
        node.tuple_items = true;
        for (std::size_t i = 0; i < items->size(); ++i)
          node.item_tuple.push_back(compile((*items)[i], fmt::format("{}/items/{}", where, i)));
      } else {
        node.items = compile(*items, where + "/items");
      }
    }
  }

  void compile_object(const json& schema, Node& node, const std::string& where) {
    if (const auto r = schema.find("required"); r != schema.end()) {
      for (const json& key : *r) node.required.push_back(key.get<std::string>());
      node.object_checks = true;
    }
    if (const auto props = schema.find("properties"); props != schema.end() && props->is_object()) {
      for (const auto& [key, sub] : props->items())
        node.properties.emplace_back(key, compile(sub, fmt::format("{}/properties/{}", where, key)));
      std::sort(node.properties.begin(), node.properties.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      node.object_checks = true;
    }
    if (const auto additional = schema.find("additionalProperties"); additional != schema.end()) {
      if (additional->is_boolean() && !additional->get<bool>())
        node.no_additional = true;
      else
        node.additional = compile(*additional, where + "/additionalProperties");
      node.object_checks = true;
    }
  }

  void compile_combinators(const json& schema, Node& node, const std::string& where) {
    const auto list = [&](const char* keyword, std::vector<const Node*>& out) {
      const auto found = schema.find(keyword);
      if (found == schema.end()) return false;
      std::size_t i = 0;
      for (const json& sub : *found) out.push_back(compile(sub, fmt::format("{}/{}/{}", where, keyword, i++)));
      node.combinators = true;
      return true;
    };
    list("allOf", node.all_of);
    node.has_any_of = list("anyOf", node.any_of);
    node.has_one_of = list("oneOf", node.one_of);
    if (const auto n = schema.find("not"); n != schema.end()) {
      node.not_schema = compile(*n, where + "/not");
      node.not_text = short_text(*n);
      node.combinators = true;
    }
  }

  const json& root_;
  Compiled& out_;
  Node* accept_ = nullptr;
  Node* reject_ = nullptr;
  // Schema objects compiled or being compiled; nullptr while a $ref's target is.
  std::unordered_map<const json*, const Node*> done_;
};

// Where a value is, as a chain from the document root: built on the stack as
// the check descends, written out only for an error.
struct PathStep {
  static constexpr std::size_t no_index = static_cast<std::size_t>(-1);
  const PathStep* parent = nullptr;
  std::string_view key;          // a member's name, when index is no_index
  std::size_t index = no_index;  // an array item's position
};

// "records/3/busbw_gbs"; empty for the document root. An empty step at the
// front vanishes (the path is extended only when it is not empty).
std::string render(const PathStep* step) {
  std::vector<const PathStep*> chain;
  for (; step != nullptr; step = step->parent) chain.push_back(step);
  std::string path;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!path.empty()) path += '/';
    if ((*it)->index == PathStep::no_index)
      path += (*it)->key;
    else
      path += std::to_string((*it)->index);
  }
  return path;
}

static_assert(std::is_same_v<json::object_t::key_compare, std::less<>> ||
                  std::is_same_v<json::object_t::key_compare, std::less<std::string>>,
              "check_object walks an object's members and the schema's properties side by side, both ascending");

class Run {
 public:
  // Without `errors`, only counts: whether a value passes a schema.
  Run(std::vector<SchemaError>* errors, std::size_t max_errors) : errors_(errors), max_(max_errors) {}

  void check(const Node& schema, const json& value, const PathStep* path) {
    if (found_ >= max_) return;
    if (schema.is_boolean) {
      if (!schema.boolean) add(path, [] { return std::string("nothing is allowed here"); });
      return;
    }
    if (schema.has_type && (schema.types & types_of(value)) == 0) {
      add(path, [&] { return fmt::format("{} is not of type {}", short_text(value), schema.expected); });
      return;  // the other keywords would only repeat the mismatch
    }
    if (schema.has_enum) {
      bool found = false;
      for (const json& option : schema.enum_values) found = found || json_equal(option, value);
      if (!found) add(path, [&] { return fmt::format("{} is not one of {}", short_text(value), schema.enum_text); });
    }
    if (schema.const_value && !json_equal(*schema.const_value, value))
      add(path, [&] { return fmt::format("{} was expected, not {}", schema.const_text, short_text(value)); });
    if (schema.number_checks && value.is_number()) check_number(schema, value, path);
    if (schema.string_checks && value.is_string()) check_string(schema, value, path);
    if (schema.array_checks && value.is_array()) check_array(schema, value, path);
    if (schema.object_checks && value.is_object()) check_object(schema, value, path);
    if (schema.combinators && found_ < max_) check_combinators(schema, value, path);
  }

  [[nodiscard]] std::size_t found() const { return found_; }

 private:
  // Errors past the cut are not worded: validate() would drop them.
  template <typename Message>
  void add(const PathStep* path, const Message& message) {
    if (found_ >= max_) return;
    ++found_;
    if (errors_ != nullptr) errors_->push_back({render(path), message()});
  }

  void check_number(const Node& schema, const json& value, const PathStep* path) {
    const double v = value.get<double>();
    if (schema.minimum && v < schema.minimum->limit)
      add(path, [&] { return fmt::format("{} is less than the minimum {}", value.dump(), schema.minimum->text); });
    if (schema.maximum && v > schema.maximum->limit)
      add(path, [&] { return fmt::format("{} is more than the maximum {}", value.dump(), schema.maximum->text); });
    if (schema.exclusive_minimum && v <= schema.exclusive_minimum->limit)
      add(path, [&] { return fmt::format("{} is not above {}", value.dump(), schema.exclusive_minimum->text); });
    if (schema.exclusive_maximum && v >= schema.exclusive_maximum->limit)
      add(path, [&] { return fmt::format("{} is not below {}", value.dump(), schema.exclusive_maximum->text); });
  }

  void check_string(const Node& schema, const json& value, const PathStep* path) {
    const std::string& s = value.get_ref<const std::string&>();
    if (schema.min_length && s.size() < schema.min_length->limit)
      add(path,
          [&] { return fmt::format("{} is shorter than {} characters", short_text(value), schema.min_length->text); });
    if (schema.max_length && s.size() > schema.max_length->limit)
      add(path,
          [&] { return fmt::format("{} is longer than {} characters", short_text(value), schema.max_length->text); });
    if (schema.pattern != nullptr && !schema.pattern->search(s))
      add(path, [&] { return fmt::format("{} does not match '{}'", short_text(value), schema.pattern_text); });
  }

  void check_array(const Node& schema, const json& value, const PathStep* path) {
    const json::array_t& array = value.get_ref<const json::array_t&>();
    if (schema.min_items && array.size() < schema.min_items->limit)
      add(path,
          [&] { return fmt::format("has {} items, fewer than the minimum {}", array.size(), schema.min_items->text); });
    if (schema.max_items && array.size() > schema.max_items->limit)
      add(path,
          [&] { return fmt::format("has {} items, more than the maximum {}", array.size(), schema.max_items->text); });
    if (schema.unique_items && found_ < max_) {
      if (const auto pair = first_equal_pair(value))
        add(path, [&] {
          return fmt::format("items {} and {} are equal ({})", pair->first, pair->second,
                             short_text(array[pair->first]));
        });
    }
    if (!schema.has_items) return;
    for (std::size_t i = 0; i < array.size() && found_ < max_; ++i) {
      const Node* sub = schema.items;
      if (schema.tuple_items) {
        if (i >= schema.item_tuple.size()) break;  // items past the list may be anything
        sub = schema.item_tuple[i];
      }
      const PathStep step{path, {}, i};
      check(*sub, array[i], &step);
    }
  }

  void check_object(const Node& schema, const json& value, const PathStep* path) {
    const json::object_t& object = value.get_ref<const json::object_t&>();
    for (const std::string& key : schema.required)
      if (object.find(key) == object.end()) add(path, [&] { return fmt::format("'{}' is a required property", key); });
    if (schema.properties.empty() && !schema.no_additional && schema.additional == nullptr) return;
    auto property = schema.properties.begin();
    const auto properties_end = schema.properties.end();
    for (const auto& member : object) {
      // Named, not a structured binding: the error's wording captures it.
      const std::string& key = member.first;
      const json& sub = member.second;
      if (found_ >= max_) return;
      while (property != properties_end && property->first < key) ++property;
      const PathStep step{path, key};
      if (property != properties_end && property->first == key) {
        check(*property->second, sub, &step);
      } else if (schema.no_additional) {
        add(path, [&] { return fmt::format("additional property '{}' is not allowed", key); });
      } else if (schema.additional != nullptr) {
        check(*schema.additional, sub, &step);
      }
    }
  }

  static bool passes(const Node& schema, const json& value, const PathStep* path) {
    Run probe(nullptr, 1);
    probe.check(schema, value, path);
    return probe.found() == 0;
  }

  void check_combinators(const Node& schema, const json& value, const PathStep* path) {
    for (const Node* sub : schema.all_of) check(*sub, value, path);
    if (schema.has_any_of) {
      bool ok = false;
      for (const Node* sub : schema.any_of) ok = ok || passes(*sub, value, path);
      if (!ok)
        add(path, [&] { return fmt::format("{} is not valid under any of the given schemas", short_text(value)); });
    }
    if (schema.has_one_of) {
      int matched = 0;
      for (const Node* sub : schema.one_of) matched += passes(*sub, value, path) ? 1 : 0;
      if (matched == 0)
        add(path, [&] { return fmt::format("{} is not valid under any of the given schemas", short_text(value)); });
      else if (matched > 1)
        add(path,
            [&] { return fmt::format("{} is valid under more than one of the given schemas", short_text(value)); });
    }
    if (schema.not_schema != nullptr && passes(*schema.not_schema, value, path))
      add(path, [&] { return fmt::format("{} should not be valid under {}", short_text(value), schema.not_text); });
  }

  std::vector<SchemaError>* errors_;
  std::size_t max_;
  std::size_t found_ = 0;
};

}  // namespace

SchemaValidator::SchemaValidator(nlohmann::json schema) {
  auto compiled = std::make_shared<Compiled>();
  check_schema(schema, schema, "#", compiled->patterns);
  compiled->root = Compiler(schema, *compiled).compile(schema, "#");
  compiled_ = std::move(compiled);
}

std::vector<SchemaError> SchemaValidator::validate(const nlohmann::json& document, std::size_t max_errors) const {
  std::vector<SchemaError> errors;
  Run(&errors, max_errors).check(*compiled_->root, document, nullptr);
  return errors;
}

}  // namespace fabricbench
