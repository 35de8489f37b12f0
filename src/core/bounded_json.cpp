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

}  // namespace

json parse_bounded_json(std::string_view text, const std::string& label, int max_depth) {
  std::vector<Step> steps;
  const json::parser_callback_t track = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (!steps.empty() && steps.back().array) ++steps.back().next;
        if (steps.size() >= static_cast<std::size_t>(max_depth))
          throw UsageError(fmt::format("{}: nested deeper than {} levels at {}", label, max_depth, path_of(steps)));
        steps.push_back({event == json::parse_event_t::array_start, 0, {}});
        break;
      case json::parse_event_t::key:
        if (!steps.empty() && parsed.is_string()) steps.back().key = parsed.get<std::string>();
        break;
      case json::parse_event_t::value:
        if (!steps.empty() && steps.back().array) ++steps.back().next;
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!steps.empty()) steps.pop_back();
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), track);
  } catch (const json::parse_error& e) {
    throw UsageError(fmt::format("{}: truncated or not JSON: {}", label, without_tag(e.what())));
  } catch (const json::exception& e) {
    throw UsageError(fmt::format("{}: a number is out of range: {}", label, without_tag(e.what())));
  }
}

void throw_integer_range(const json& v, std::string_view where, std::string_view minimum, std::string_view maximum) {
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  throw UsageError(fmt::format("{}: {} is not an integer from {} to {}", where, text, minimum, maximum));
}

}  // namespace fabricbench
