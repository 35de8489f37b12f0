#include "fabricbench/analysis/ladders.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "fabricbench/core/stats.hpp"

namespace fabricbench {

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

std::vector<Verdict> scaling_verdicts(const ScaleResult& scaling, double threshold,
                                      const std::vector<std::string>& slow_hosts) {
  std::vector<Verdict> out;
  std::vector<Op> ops;
  for (const LevelResult& l : scaling.levels)
    if (l.kind == LevelKind::nodes && std::find(ops.begin(), ops.end(), l.op) == ops.end()) ops.push_back(l.op);
  for (const Op op : ops) {
    const LevelResult* one = nullptr;
    const LevelResult* two = nullptr;
    const LevelResult* top = nullptr;
    for (const LevelResult& l : scaling.levels) {
      if (l.kind != LevelKind::nodes || l.op != op || l.busbw_median_gbs <= 0) continue;
      if (l.nodes_per_group == 1) one = &l;
      if (l.nodes_per_group == 2) two = &l;
      if (top == nullptr || l.nodes_per_group > top->nodes_per_group) top = &l;
    }
    if (top == nullptr || top->nodes_per_group < 2) continue;
    const int n = top->nodes_per_group;
    const std::string subject = fmt::format("scaling {}", name(op));
    const std::string from_one =
        one != nullptr ? fmt::format(
                             "; 1 -> {} nodes: {:.0f}% of one node's {:.2f} GB/s (the step from inside a "
                             "node onto the network, not judged)",
                             n, 100.0 * top->busbw_median_gbs / one->busbw_median_gbs, one->busbw_median_gbs)
                       : std::string();
    if (n < 3 || two == nullptr) {
      Verdict v = make_verdict(
          Level::info, VerdictKind::ladder, subject,
          fmt::format("{} busbw {:.2f} GB/s at {} nodes{}; judging scaling needs a ladder to 3 or more nodes "
                      "(the trend from 2 nodes on, against {:.0f}%)",
                      name(op), top->busbw_median_gbs, n, from_one, threshold * 100));
      if (one != nullptr) v.evidence.push_back({"busbw at 1 node", one->busbw_median_gbs, "GB/s"});
      v.evidence.push_back({fmt::format("busbw at {} nodes", n), top->busbw_median_gbs, "GB/s"});
      out.push_back(std::move(v));
      continue;
    }
    const double efficiency = top->busbw_median_gbs / two->busbw_median_gbs;
    const bool low = efficiency < threshold;
    Verdict v = make_verdict(
        low ? Level::warn : Level::ok, VerdictKind::ladder, subject,
        fmt::format("{} busbw at {} nodes is {:.0f}% of 2 nodes' ({:.2f} against {:.2f} GB/s; {} {:.0f}%){}", name(op),
                    n, efficiency * 100, top->busbw_median_gbs, two->busbw_median_gbs, low ? "below" : "at or above",
                    threshold * 100, from_one));
    v.evidence = {{"busbw at 2 nodes", two->busbw_median_gbs, "GB/s"},
                  {fmt::format("busbw at {} nodes", n), top->busbw_median_gbs, "GB/s"},
                  {"scaling efficiency from 2 nodes", efficiency * 100, "%"}};
    if (one != nullptr) v.evidence.insert(v.evidence.begin(), {"busbw at 1 node", one->busbw_median_gbs, "GB/s"});
    if (low) {
      v.cause_kind = "scaling_loss";
      v.cause = slow_hosts.empty()
                    ? "busbw falls as nodes join although the node-pair matrix names no slow node: the larger "
                      "groups cross switch uplinks that more nodes share (oversubscription), or a node is slow "
                      "only under the load of a whole group"
                    : fmt::format(
                          "busbw falls as nodes join: the larger groups include {}, which the node-pair "
                          "matrix names slow",
                          fmt::join(slow_hosts, ", "));
      v.fix = slow_hosts.empty()
                  ? "measure the fabric's cuts (fabricbench p2p --bisection-halvings 10) and ask the provider for "
                    "its oversubscription ratio; expect this efficiency at full scale until it is fixed"
                  : fmt::format("leave {} out of the job and run again; ask the provider to check its links",
                                fmt::join(slow_hosts, ", "));
      v.hosts = slow_hosts;
    }
    out.push_back(std::move(v));
  }
  return out;
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

void analyze_gpu_ladder(std::vector<GpuLevelResult>& levels) {
  for (GpuLevelResult& l : levels) {
    std::vector<double> values;
    for (const GpuSetResult& s : l.sets) values.push_back(s.busbw_gbs);
    if (!values.empty()) {
      l.busbw_min_gbs = *std::min_element(values.begin(), values.end());
      l.busbw_median_gbs = median(values);
    }
  }
  for (GpuLevelResult& l : levels) {
    const auto pair = std::find_if(levels.begin(), levels.end(), [&l](const GpuLevelResult& p) {
      return p.gpus == 2 && p.choice != GpuSetChoice::spread && p.op == l.op && p.bytes == l.bytes;
    });
    if (pair != levels.end() && pair->busbw_median_gbs > 0) l.efficiency = l.busbw_median_gbs / pair->busbw_median_gbs;
  }
}

std::vector<GpuProjectionPoint> project_gpu_levels(const ProjectionInput& input,
                                                   const std::vector<GpuLevelResult>& levels) {
  const auto point = [&input](int gpus, GpuSetChoice choice, double comm_ms) {
    const ProjectionPoint p = project(input, 1, gpus, comm_ms);
    GpuProjectionPoint g;
    g.gpus = gpus;
    g.choice = choice;
    g.comm_ms = p.comm_ms;
    g.step_ms = p.step_ms;
    g.speedup = p.speedup;
    g.efficiency = p.efficiency;
    return g;
  };
  std::vector<GpuProjectionPoint> points{point(1, GpuSetChoice::any, 0.0)};
  const auto median_ms = [&](Op op, int gpus, GpuSetChoice choice) -> std::optional<double> {
    for (const GpuLevelResult& l : levels) {
      if (l.op != op || l.gpus != gpus || l.choice != choice || l.bytes != input.grad_bytes || l.sets.empty()) continue;
      std::vector<double> times;
      for (const GpuSetResult& s : l.sets) times.push_back(s.time_us);
      return median(times) / 1e3;
    }
    return std::nullopt;
  };
  const Op lead = input.sharded ? Op::reducescatter : Op::allreduce;
  for (const GpuLevelResult& l : levels) {
    if (l.op != lead || l.bytes != input.grad_bytes) continue;
    std::optional<double> comm = median_ms(lead, l.gpus, l.choice);
    if (input.sharded) {
      const auto gather = median_ms(Op::allgather, l.gpus, l.choice);
      if (!comm || !gather) continue;
      *comm += *gather;
    }
    if (comm) points.push_back(point(l.gpus, l.choice, *comm));
  }
  return points;
}

void price_gpu_ladder(GpuLadderResult& result, std::optional<std::int64_t> steps, std::optional<double> per_gpu_hour,
                      const std::vector<ServerPrice>& servers) {
  result.steps = steps;
  result.price_per_gpu_hour = per_gpu_hour;
  result.servers.clear();
  result.cheapest_gpus.reset();
  result.fastest_gpus.reset();
  for (GpuProjectionPoint& p : result.projection) {
    p.job_hours.reset();
    p.cost_per_job.reset();
    if (!steps) continue;
    p.job_hours = job_hours(*steps, p.step_ms);
    if (per_gpu_hour) p.cost_per_job = *p.job_hours * p.gpus * *per_gpu_hour;
  }
  // The set a job of k GPUs should get: the closest (or the only kind).
  const auto best_placed = [&result](int gpus) -> const GpuProjectionPoint* {
    for (const GpuProjectionPoint& p : result.projection)
      if (p.gpus == gpus && p.choice != GpuSetChoice::spread) return &p;
    return nullptr;
  };
  // Ties go to fewer GPUs: candidates come in ascending GPU count.
  const auto pick = [](std::optional<int>& slot, double& best, int gpus, double value) {
    if (!slot || value < best) {
      slot = gpus;
      best = value;
    }
  };
  double cheapest = 0;
  double fastest = 0;
  if (!servers.empty()) {
    for (const ServerPrice& s : servers) {
      ServerCost c;
      c.gpus = s.gpus;
      c.price_per_hour = s.per_hour;
      const GpuProjectionPoint* p = best_placed(s.gpus);
      if (p == nullptr) {
        c.why_not = s.gpus > result.gpus_per_node
                        ? fmt::format("not measured: a node here has {} GPUs", result.gpus_per_node)
                        : std::string("not measured");
      } else if (p->job_hours) {
        c.job_hours = p->job_hours;
        c.cost_per_job = *p->job_hours * s.per_hour;
        pick(result.cheapest_gpus, cheapest, c.gpus, *c.cost_per_job);
        pick(result.fastest_gpus, fastest, c.gpus, *c.job_hours);
      } else {
        c.why_not = "no job length (--steps)";
      }
      result.servers.push_back(c);
    }
    return;
  }
  std::vector<int> counts;
  for (const GpuProjectionPoint& p : result.projection)
    if (p.choice != GpuSetChoice::spread) counts.push_back(p.gpus);
  std::sort(counts.begin(), counts.end());
  for (const int k : counts) {
    const GpuProjectionPoint* p = best_placed(k);
    if (p->cost_per_job) pick(result.cheapest_gpus, cheapest, k, *p->cost_per_job);
    pick(result.fastest_gpus, fastest, k, p->job_hours.value_or(p->step_ms));
  }
}

void judge_ladder(ScaleResult& result) {
  analyze_ladder(result.levels, result.nic_gbit_per_node, result.ranks_per_node);
  if (result.projection_input)
    result.projection = project_levels(*result.projection_input, result.levels, result.ranks_per_node);
}

void judge_gpu_ladder(GpuLadderResult& result, std::optional<std::int64_t> steps, std::optional<double> per_gpu_hour,
                      const std::vector<ServerPrice>& servers) {
  analyze_gpu_ladder(result.levels);
  if (!result.projection_input) return;
  result.projection = project_gpu_levels(*result.projection_input, result.levels);
  price_gpu_ladder(result, steps, per_gpu_hour, servers);
}

}  // namespace fabricbench
