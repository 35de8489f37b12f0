#pragma once
// Judging the ladders: the scaling ladder's and the GPU-count ladder's
// medians, efficiencies and NIC ceilings, the training projections made
// from them, and their price. Pure arithmetic over the records.

#include <cstdint>
#include <optional>
#include <vector>

#include "fabricbench/core/config.hpp"
#include "fabricbench/records/gpu_ladder.hpp"
#include "fabricbench/records/scaling.hpp"
#include "fabricbench/records/verdict.hpp"

namespace fabricbench {

// The NIC-bound bus-bandwidth ceiling of a multi-node group: each rank's
// share of its node's NIC line rate (Gb/s), in GB/s. Collectives across
// nodes cannot move more than that per rank through the network.
double nic_ceiling_gbs(double nic_gbit_per_node, int ranks_per_node);

// Fills min/median per level, efficiency against the 1-node level of the
// same op, and the ceiling fields and warnings when the NIC rate is known.
void analyze_ladder(std::vector<LevelResult>& levels, std::optional<double> nic_gbit_per_node, int ranks_per_node);

// comm_ms is the measured communication time per step at that node count;
// step = compute + max(0, comm - overlap * compute).
ProjectionPoint project(const ProjectionInput& input, int nodes, int gpus, double comm_ms);

// Projection points for every `nodes` level, from the levels measured at
// input.grad_bytes (all-reduce, or reduce-scatter + all-gather when sharded).
std::vector<ProjectionPoint> project_levels(const ProjectionInput& input, const std::vector<LevelResult>& levels,
                                            int ranks_per_node);

// Fills min/median per level and efficiency against the best pair.
void analyze_gpu_ladder(std::vector<GpuLevelResult>& levels);

// Projection points from the levels measured at input.grad_bytes (all-reduce,
// or reduce-scatter + all-gather when sharded): one GPU (no communication,
// the step is the compute time), then every level and choice.
std::vector<GpuProjectionPoint> project_gpu_levels(const ProjectionInput& input,
                                                   const std::vector<GpuLevelResult>& levels);

// Job time and cost per job: at each point with `steps`, the cost at
// `per_gpu_hour`; for each priced server size, the cost of the job on the
// point of that many GPUs (closest or any set); then the cheapest and the
// fastest. Pure arithmetic over `result.projection`.
void price_gpu_ladder(GpuLadderResult& result, std::optional<std::int64_t> steps, std::optional<double> per_gpu_hour,
                      const std::vector<ServerPrice>& servers);

// The scaling ladder judged in place: analyze_ladder over its levels, then,
// with a projection input, the projection over its `nodes` levels.
void judge_ladder(ScaleResult& result);

// Scaling judged, one verdict per op of the ladder's node levels. From 3
// nodes on, the busbw of the largest node count against 2 nodes' (the trend
// across the network: a ring's busbw stays flat as nodes join on a fabric
// that carries them) below `threshold` is a WARN with its cause and fix,
// else OK; 1 -> N (the step from inside a node onto the network) is said in
// the reason, never judged. With 2 nodes at most, one INFO says what
// judging needs. `slow_hosts`: the nodes the pair matrix named, for the cause.
std::vector<Verdict> scaling_verdicts(const ScaleResult& scaling, double threshold,
                                      const std::vector<std::string>& slow_hosts);

// The GPU-count ladder judged in place: analyze_gpu_ladder, then, with a
// projection input, the projection and its price (price_gpu_ladder).
void judge_gpu_ladder(GpuLadderResult& result, std::optional<std::int64_t> steps, std::optional<double> per_gpu_hour,
                      const std::vector<ServerPrice>& servers);

}  // namespace fabricbench
