#include "fabricbench/records/scaling.hpp"

#include <fmt/format.h>

namespace fabricbench {

std::string_view name(LevelKind kind) { return kind == LevelKind::rail ? "rail" : "nodes"; }

std::string level_label(LevelKind kind, int nodes_per_group) {
  if (kind == LevelKind::rail) return "rail (1 rank/node)";
  return fmt::format("{} node{}", nodes_per_group, nodes_per_group == 1 ? "" : "s");
}

std::string level_label(const LevelResult& level) { return level_label(level.kind, level.nodes_per_group); }

}  // namespace fabricbench
