#pragma once
// The scaling ladder: how bus bandwidth holds up from one node to all of
// them. Level k runs groups of k nodes (1, 2, 4, ... and all N), every group
// of a level at once so the fabric is loaded as a real job loads it; a rail
// level runs one rank per node (the same local rank) across all nodes.
// Plus a projection of data-parallel training from the measured times.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/core/config.hpp"
#include "fabricbench/core/types.hpp"
#include "fabricbench/records/scaling.hpp"

namespace fabricbench {

// One level of the ladder: which group each node belongs to (-1: idle at
// this level, when N is not a multiple of the group size).
struct LevelPlan {
  LevelKind kind = LevelKind::nodes;
  int nodes_per_group = 1;
  std::vector<int> group_of_node;
  int groups = 0;
};

// Levels for N nodes: 1, 2, 4, ... below N, then N; then the rail level
// (only when N > 1).
std::vector<LevelPlan> plan_ladder(int nodes);

// The projection's input as configured, its gradient rounded down to whole
// elements of `dtype` (the type the ladder measures it in).
ProjectionInput projection_input(const ScaleConfig& scale, DType dtype);

}  // namespace fabricbench
