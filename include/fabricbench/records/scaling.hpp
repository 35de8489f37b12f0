#pragma once
// The scaling ladder's records: what each level and group measured, and the
// data-parallel projection made from them.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/core/types.hpp"

namespace fabricbench {

enum class LevelKind { nodes, rail };

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

// Projected data-parallel training at one node count.
struct ProjectionInput {
  std::size_t grad_bytes = 0;
  double compute_ms = 0;
  double overlap = 0;    // fraction of the compute time that communication can hide under
  bool sharded = false;  // reduce-scatter + all-gather instead of all-reduce
};

struct ProjectionPoint {
  int nodes = 0;
  int gpus = 0;
  double comm_ms = 0;
  double step_ms = 0;
  double speedup = 0;     // over one GPU without communication
  double efficiency = 0;  // speedup / gpus
};

struct ScaleResult {
  std::size_t bytes = 0;  // the large size every level runs
  int ranks_per_node = 0;
  std::optional<double> nic_gbit_per_node;
  std::vector<LevelResult> levels;
  std::optional<ProjectionInput> projection_input;
  std::vector<ProjectionPoint> projection;
};

std::string_view name(LevelKind kind);

// The one label of a level, wherever it is shown: "1 node", "2 nodes",
// "rail (1 rank/node)".
std::string level_label(LevelKind kind, int nodes_per_group);

std::string level_label(const LevelResult& level);

}  // namespace fabricbench
