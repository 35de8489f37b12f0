#include "fabricbench/engine/scaling.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fabricbench/core/stats.hpp"

namespace fabricbench {

std::vector<LevelPlan> plan_ladder(int nodes) {
  std::vector<LevelPlan> levels;
  if (nodes < 1) return levels;
  std::vector<int> sizes;
  for (int g = 1; g < nodes; g *= 2) sizes.push_back(g);
  sizes.push_back(nodes);
  for (const int g : sizes) {
    LevelPlan level;
    level.nodes_per_group = g;
    level.groups = nodes / g;
    for (int n = 0; n < nodes; ++n) level.group_of_node.push_back(n / g < level.groups ? n / g : -1);
    levels.push_back(level);
  }
  if (nodes > 1) {
    LevelPlan rail;
    rail.kind = LevelKind::rail;
    rail.nodes_per_group = nodes;
    rail.groups = 1;  // one per local rank; the caller splits by local rank
    rail.group_of_node.assign(static_cast<std::size_t>(nodes), 0);
    levels.push_back(rail);
  }
  return levels;
}

ProjectionInput projection_input(const ScaleConfig& scale, DType dtype) {
  ProjectionInput input;
  input.grad_bytes = scale.grad_bytes / element_size(dtype) * element_size(dtype);
  input.compute_ms = scale.compute_ms;
  input.overlap = scale.overlap;
  input.sharded = scale.sharded;
  return input;
}

}  // namespace fabricbench
