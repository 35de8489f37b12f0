#include "fabricbench/engine/scaling.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fabricbench/core/stats.hpp"

namespace fabricbench {

std::string_view name(LevelKind kind) { return kind == LevelKind::rail ? "rail" : "nodes"; }

std::string level_label(LevelKind kind, int nodes_per_group) {
  if (kind == LevelKind::rail) return "rail (1 rank/node)";
  return fmt::format("{} node{}", nodes_per_group, nodes_per_group == 1 ? "" : "s");
}

std::string level_label(const LevelResult& level) { return level_label(level.kind, level.nodes_per_group); }

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

double nic_ceiling_gbs(double nic_gbit_per_node, int ranks_per_node) {
  if (ranks_per_node < 1) return 0;
  return nic_gbit_per_node / 8.0 / ranks_per_node;
}

void analyze_ladder(std::vector<LevelResult>& levels, std::optional<double> nic_gbit_per_node, int ranks_per_node) {
  for (LevelResult& level : levels) {
    std::vector<double> values;
    for (const GroupResult& g : level.groups) values.push_back(g.busbw_gbs);
    if (!values.empty()) {
      level.busbw_min_gbs = *std::min_element(values.begin(), values.end());
      level.busbw_median_gbs = percentile(values, 0.5);
    }
  }
  for (LevelResult& level : levels) {
    const auto base = std::find_if(levels.begin(), levels.end(), [&level](const LevelResult& l) {
      return l.kind == LevelKind::nodes && l.nodes_per_group == 1 && l.op == level.op && l.bytes == level.bytes;
    });
    if (base != levels.end() && base->busbw_median_gbs > 0)
      level.efficiency = level.busbw_median_gbs / base->busbw_median_gbs;
    const bool crosses_nodes = level.nodes_per_group > 1;
    if (crosses_nodes && nic_gbit_per_node && *nic_gbit_per_node > 0) {
      // The rail level has one rank per node, so it gets the whole NIC.
      const int sharing = level.kind == LevelKind::rail ? 1 : ranks_per_node;
      level.ceiling_gbs = nic_ceiling_gbs(*nic_gbit_per_node, sharing);
      level.ceiling_fraction = level.busbw_median_gbs / *level.ceiling_gbs;
      if (*level.ceiling_fraction > 1.05) {
        level.warning = fmt::format(
            "{} busbw {:.1f} GB/s is above the NIC-bound ceiling of {:.1f} GB/s: NCCL's tree or NVLS algorithms "
            "move less data through the network than the busbw formula assumes, so this figure does not show "
            "what the network sustains at larger node counts",
            name(level.op), level.busbw_median_gbs, *level.ceiling_gbs);
      }
    }
  }
}

ProjectionInput projection_input(const ScaleConfig& scale, DType dtype) {
  ProjectionInput input;
  input.grad_bytes = scale.grad_bytes / element_size(dtype) * element_size(dtype);
  input.compute_ms = scale.compute_ms;
  input.overlap = scale.overlap;
  input.sharded = scale.sharded;
  return input;
}

ProjectionPoint project(const ProjectionInput& input, int nodes, int gpus, double comm_ms) {
  ProjectionPoint p;
  p.nodes = nodes;
  p.gpus = gpus;
  p.comm_ms = comm_ms;
  const double exposed = std::max(0.0, comm_ms - input.overlap * input.compute_ms);
  p.step_ms = input.compute_ms + exposed;
  p.speedup = p.step_ms > 0 ? gpus * input.compute_ms / p.step_ms : 0;
  p.efficiency = gpus > 0 ? p.speedup / gpus : 0;
  return p;
}

std::vector<ProjectionPoint> project_levels(const ProjectionInput& input, const std::vector<LevelResult>& levels,
                                            int ranks_per_node) {
  std::vector<ProjectionPoint> points;
  const auto median_time_ms = [&](Op op, int nodes) -> std::optional<double> {
    for (const LevelResult& l : levels) {
      if (l.kind != LevelKind::nodes || l.op != op || l.nodes_per_group != nodes || l.bytes != input.grad_bytes)
        continue;
      std::vector<double> times;
      for (const GroupResult& g : l.groups) times.push_back(g.time_us);
      if (times.empty()) return std::nullopt;
      return percentile(times, 0.5) / 1e3;
    }
    return std::nullopt;
  };
  for (const LevelResult& l : levels) {
    if (l.kind != LevelKind::nodes || l.bytes != input.grad_bytes) continue;
    if (l.op != (input.sharded ? Op::reducescatter : Op::allreduce)) continue;
    std::optional<double> comm = median_time_ms(l.op, l.nodes_per_group);
    if (input.sharded) {
      const auto gather = median_time_ms(Op::allgather, l.nodes_per_group);
      if (!comm || !gather) continue;
      *comm += *gather;
    }
    if (!comm) continue;
    points.push_back(project(input, l.nodes_per_group, l.nodes_per_group * ranks_per_node, *comm));
  }
  return points;
}

}  // namespace fabricbench
