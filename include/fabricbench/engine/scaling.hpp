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

namespace fabricbench {

enum class LevelKind { nodes, rail };

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

// What one group measured.
struct GroupResult {
  int group = 0;
  std::vector<int> nodes;          // node indices
  std::vector<std::string> hosts;  // their hostnames
  int ranks = 0;
  double time_us = 0;
  double busbw_gbs = 0;
  std::uint64_t wrong = 0;
};

struct LevelResult {
  LevelKind kind = LevelKind::nodes;
  Op op = Op::allreduce;
  std::size_t bytes = 0;
  int nodes_per_group = 1;
  int ranks_per_group = 0;
  std::vector<GroupResult> groups;
  double busbw_min_gbs = 0;
  double busbw_median_gbs = 0;
  std::optional<double> efficiency;        // median busbw / median busbw of 1 node
  std::optional<double> ceiling_gbs;       // NIC-bound busbw ceiling, when the line rate is known
  std::optional<double> ceiling_fraction;  // median busbw / ceiling
  std::string warning;                     // e.g. busbw above the NIC ceiling
};

// The NIC-bound bus-bandwidth ceiling of a multi-node group: each rank's
// share of its node's NIC line rate (Gb/s), in GB/s. Collectives across
// nodes cannot move more than that per rank through the network.
double nic_ceiling_gbs(double nic_gbit_per_node, int ranks_per_node);

// Fills min/median per level, efficiency against the 1-node level of the
// same op, and the ceiling fields and warnings when the NIC rate is known.
void analyze_ladder(std::vector<LevelResult>& levels, std::optional<double> nic_gbit_per_node, int ranks_per_node);

// Projected data-parallel training at one node count.
struct ProjectionInput {
  std::size_t grad_bytes = 0;
  double compute_ms = 0;
  double overlap = 0;    // fraction of the compute time that communication can hide under
  bool sharded = false;  // reduce-scatter + all-gather instead of all-reduce
};

// The projection's input as configured, its gradient rounded down to whole
// elements of `dtype` (the type the ladder measures it in).
ProjectionInput projection_input(const ScaleConfig& scale, DType dtype);

struct ProjectionPoint {
  int nodes = 0;
  int gpus = 0;
  double comm_ms = 0;
  double step_ms = 0;
  double speedup = 0;     // over one GPU without communication
  double efficiency = 0;  // speedup / gpus
};

// comm_ms is the measured communication time per step at that node count;
// step = compute + max(0, comm - overlap * compute).
ProjectionPoint project(const ProjectionInput& input, int nodes, int gpus, double comm_ms);

struct ScaleResult {
  std::size_t bytes = 0;  // the large size every level runs
  int ranks_per_node = 0;
  std::optional<double> nic_gbit_per_node;
  std::vector<LevelResult> levels;
  std::optional<ProjectionInput> projection_input;
  std::vector<ProjectionPoint> projection;
};

// Projection points for every `nodes` level, from the levels measured at
// input.grad_bytes (all-reduce, or reduce-scatter + all-gather when sharded).
std::vector<ProjectionPoint> project_levels(const ProjectionInput& input, const std::vector<LevelResult>& levels,
                                            int ranks_per_node);

std::string_view name(LevelKind kind);

// The one label of a level, wherever it is shown: "1 node", "2 nodes",
// "rail (1 rank/node)".
std::string level_label(LevelKind kind, int nodes_per_group);
std::string level_label(const LevelResult& level);

}  // namespace fabricbench
