#include "fabricbench/core/bounded_json.hpp"

#include <vector>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"

namespace fabricbench {
namespace {

using json = nlohmann::json;

// "[json.exception.parse_error.101] parse error at line 3, ...": the tag says
// nothing to the person reading it.
std::string without_tag(std::string message) {
  if (const auto bracket = message.find("] "); message.rfind("[json.exception", 0) == 0 && bracket != std::string::npos)
    message = message.substr(bracket + 2);
  return message;
}

// Where the parser is: one step per open container, the key or index of
// the element being read.
struct Step {
  bool array = false;
  std::size_t next = 0;  // arrays: elements seen so far
  std::string key;       // objects: the current member
};

std::string path_of(const std::vector<Step>& steps) {
  std::string path;
  for (const Step& s : steps) {
    if (path.size() > 120) return path + "/...";
    path += (path.empty() ? "" : "/") + (s.array ? std::to_string(s.next == 0 ? 0 : s.next - 1) : s.key);
  }
  return path;
}

// What a value costs in memory as nlohmann::json holds it (libstdc++,
// 64-bit, 16 bytes of allocator overhead per block): its slot in an array
// (16 bytes, doubled for the vector's growth) or its node in an object's map
// (links, key and value); a string's own block, plus its characters beyond
// the 15 held inline, twice over (the lexer grows a string by doubling, and
// the value keeps that capacity); a container's own block.
constexpr std::size_t root_slot = 16;
constexpr std::size_t array_slot = 32;
constexpr std::size_t member_node = 96;
constexpr std::size_t string_block = 48;
constexpr std::size_t array_block = 40;
constexpr std::size_t object_block = 64;
constexpr std::size_t heap_text(std::size_t n) { return n > 15 ? 2 * n + 1 : 0; }

std::size_t estimate(const json& v) {
  switch (v.type()) {
    case json::value_t::object: {
      std::size_t c = object_block;
      for (const auto& [k, x] : v.items()) c += member_node + heap_text(k.size()) + estimate(x);
      return c;
    }
    case json::value_t::array: {
      std::size_t c = array_block;
      for (const json& x : v) c += array_slot + estimate(x);
      return c;
    }
    case json::value_t::string:
      return string_block + heap_text(v.get_ref<const json::string_t&>().size());
    case json::value_t::binary:
      return string_block + v.get_binary().size();
    default:
      return 0;
  }
}

// Builds the document as the parser reads it (json::parse's own DOM builder
// does the same), refusing to open a container deeper than the bound. Not a
// parser callback: nlohmann's callback parser scans the parent container at
// every object's end, which is quadratic in an array of objects (a 4096-rank
// result file's 261,632 pair links took 25 s to load that way).
class BoundedBuilder {
 public:
  BoundedBuilder(json& root, const std::string& label, int max_depth, std::size_t text_bytes)
      : root_(root),
        label_(label),
        max_depth_(static_cast<std::size_t>(max_depth)),
        text_bytes_(text_bytes),
        budget_(json_memory_budget(text_bytes)) {}

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(json::number_integer_t v) { return put(v); }
  bool number_unsigned(json::number_unsigned_t v) { return put(v); }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return put(v); }
  bool string(json::string_t& v) {
    charge(string_block + heap_text(v.size()));
    return put(std::move(v));
  }
  bool binary(json::binary_t& v) {
    charge(string_block + v.size());
    return put(json::binary(std::move(v)));
  }
  bool start_object(std::size_t /*size*/) { return open(json::value_t::object, false); }
  bool start_array(std::size_t /*size*/) { return open(json::value_t::array, true); }
  bool key(json::string_t& k) {
    charge(member_node + heap_text(k.size()));
    steps_.back().key = k;
    member_ = &(*open_.back())[std::move(k)];  // a repeated key: the last value wins, as in json::parse
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  // A syntax error, or a number the parser cannot hold (1e309).
  [[noreturn]] bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                                const nlohmann::detail::exception& e) {
    const bool range = dynamic_cast<const json::out_of_range*>(&e) != nullptr;
    throw UsageError(fmt::format("{}: {}: {}", label_, range ? "a number is out of range" : "truncated or not JSON",
                                 without_tag(e.what())));
  }

 private:
  // Places a value where the parser is: the root, the next array element,
  // or the member whose key came last.
  json* place(json&& v) {
    if (open_.empty()) {
      charge(root_slot);
      root_ = std::move(v);
      return &root_;
    }
    json& parent = *open_.back();
    if (parent.is_array()) {
      charge(array_slot);
      ++steps_.back().next;
      parent.push_back(std::move(v));
      return &parent.back();
    }
    *member_ = std::move(v);
    return member_;
  }
  bool put(json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(json::value_t type, bool array) {
    if (steps_.size() >= max_depth_) {
      if (!steps_.empty() && steps_.back().array) ++steps_.back().next;
      throw UsageError(fmt::format("{}: nested deeper than {} levels at {}", label_, max_depth_, path_of(steps_)));
    }
    charge(array ? array_block : object_block);
    open_.push_back(place(json(type)));
    steps_.push_back({array, 0, {}});
    return true;
  }
  bool close() {
    open_.pop_back();
    steps_.pop_back();
    return true;
  }
  // Counted before the memory is taken: a file of empty objects is refused
  // at its bound, not after the allocator has given what it has.
  void charge(std::size_t bytes) {
    spent_ += bytes;
    if (spent_ > budget_)
      throw UsageError(fmt::format(
          "{}: its JSON would take more than {} MiB of memory ({} bytes per byte of its {} bytes, plus {} MiB); a "
          "result is never that dense",
          label_, budget_ >> 20U, json_memory_per_byte, text_bytes_, json_memory_slack >> 20U));
  }

  json& root_;
  const std::string& label_;
  std::size_t max_depth_;
  std::size_t text_bytes_;
  std::size_t budget_;
  std::size_t spent_ = 0;
  std::vector<json*> open_;  // the containers being filled, outermost first
  std::vector<Step> steps_;
  json* member_ = nullptr;
};

// Text or a stream: nlohmann's input adapters take either.
template <class Input>
json parse_with_builder(Input&& input, const std::string& label, int max_depth, std::size_t text_bytes) {
  json root;
  BoundedBuilder builder(root, label, max_depth, text_bytes);
  try {
    json::sax_parse(std::forward<Input>(input), &builder);
  } catch (...) {
    dismantle_json(root);  // out of memory included: the partial document goes without allocating
    throw;
  }
  return root;
}

}  // namespace

void dismantle_json(json& document) noexcept {
  // Depth-first, one element at a time: each is emptied before it goes, so
  // it goes as a scalar or an empty container, and nlohmann's destructor
  // (which otherwise moves a container's elements onto a vector first) has
  // nothing to allocate. The recursion is as deep as the document, which
  // parse_bounded_json bounds.
  if (document.is_array()) {
    auto& elements = document.get_ref<json::array_t&>();
    while (!elements.empty()) {
      dismantle_json(elements.back());
      elements.pop_back();
    }
  } else if (document.is_object()) {
    auto& members = document.get_ref<json::object_t&>();
    while (!members.empty()) {
      dismantle_json(members.begin()->second);
      members.erase(members.begin());
    }
  }
}

json parse_bounded_json(std::string_view text, const std::string& label, int max_depth) {
  return parse_with_builder(text, label, max_depth, text.size());
}

json parse_bounded_json(std::FILE* file, std::size_t file_bytes, const std::string& label, int max_depth) {
  return parse_with_builder(file, label, max_depth, file_bytes);
}

std::size_t json_memory_estimate(const json& document) { return root_slot + estimate(document); }

void throw_integer_range(const json& v, std::string_view where, std::string_view minimum, std::string_view maximum) {
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  throw UsageError(fmt::format("{}: {} is not an integer from {} to {}", where, text, minimum, maximum));
}

}  // namespace fabricbench
