#include "fabricbench/engine/model_parallel.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"
#include "fabricbench/core/sizes.hpp"
#include "fabricbench/core/stats.hpp"
#include "fabricbench/engine/sweep.hpp"

namespace fabricbench {
namespace {

// Megatron's TP layer: two all-reduces forward (after attention and after
// the MLP) and their two counterparts backward.
constexpr int tp_allreduces_per_layer = 4;
// One activation forward, one gradient backward per micro-batch and stage boundary.
constexpr int pp_transfers_per_micro_batch = 2;

// This rank's TP measurement, gathered to every rank: only a group's first
// rank speaks for its group.
struct TpLine {
  bool speaks = false;
  double time_us = 0;
  std::uint64_t wrong = 0;
};

}  // namespace

ModelParallelPoint project_model_parallel(const ModelParallelConfig& config, double compute_ms, int dp,
                                          double tp_allreduce_us, double pp_transfer_us) {
  const int tp = std::max(config.tp, 1);
  const int pp = std::max(config.pp, 1);
  const int m = std::max(config.micro_batches, 1);
  ModelParallelPoint p;
  p.compute_ms = compute_ms / (tp * pp);
  const double per_micro_batch = p.compute_ms / m;
  const double layers_per_stage = static_cast<double>(config.layers) / pp;
  const double tp_per_micro_batch = tp > 1 ? tp_allreduces_per_layer * layers_per_stage * tp_allreduce_us / 1e3 : 0.0;
  const double pp_per_micro_batch = pp > 1 ? pp_transfers_per_micro_batch * pp_transfer_us / 1e3 : 0.0;
  const double slot = per_micro_batch + tp_per_micro_batch + pp_per_micro_batch;
  p.tp_comm_ms = m * tp_per_micro_batch;
  p.pp_comm_ms = m * pp_per_micro_batch;
  p.bubble_ms = (pp - 1) * slot;
  p.bubble_fraction = static_cast<double>(pp - 1) / (m + pp - 1);
  p.step_ms = (m + pp - 1) * slot;
  p.speedup = p.step_ms > 0 ? dp * compute_ms / p.step_ms : 0;
  const int gpus = dp * tp * pp;
  p.efficiency = gpus > 0 ? p.speedup / gpus : 0;
  return p;
}

std::optional<PpLink> pipeline_link(const PairsResult& pairs, int pp, std::size_t bytes, std::string& why) {
  const int nodes = pairs.nodes.size;
  if (pp < 2 || nodes < pp || nodes % pp != 0) {
    why = fmt::format("{} nodes in the pair matrix cannot hold {} pipeline stages", nodes, pp);
    return std::nullopt;
  }
  const int per_stage = nodes / pp;
  const int rails = std::max(pairs.ranks_per_node, 1);
  std::optional<PpLink> slowest;
  for (int stage = 0; stage + 1 < pp; ++stage) {
    for (int j = 0; j < per_stage; ++j) {
      const int from = stage * per_stage + j;
      const int to = from + per_stage;
      const std::optional<double>& bw = pairs.nodes.bw(from, to);
      const std::optional<double>& lat = pairs.nodes.lat(from, to);
      if (!bw || !lat || !(*bw > 0)) {
        why = fmt::format(
            "the pair matrix has no figure for {} <-> {} (a link between stages; --pairs all measures it)",
            from < static_cast<int>(pairs.hosts.size()) ? pairs.hosts[static_cast<std::size_t>(from)]
                                                        : std::to_string(from),
            to < static_cast<int>(pairs.hosts.size()) ? pairs.hosts[static_cast<std::size_t>(to)] : std::to_string(to));
        return std::nullopt;
      }
      PpLink link;
      link.from = from;
      link.to = to;
      link.latency_us = *lat;
      link.bandwidth_gbs = *bw / rails;
      link.transfer_us = pp_transfer_us(link.latency_us, link.bandwidth_gbs, bytes);
      if (!slowest || link.transfer_us > slowest->transfer_us) slowest = link;
    }
  }
  return slowest;
}

void check_model_parallel_layout(const ModelParallelConfig& config, const Layout& layout) {
  if (!config.enabled()) return;
  const int rpn = uniform_ranks_per_node(layout);
  if (config.tp > rpn || rpn % config.tp != 0)
    throw UsageError(fmt::format("--tp {}: must divide the {} rank{} per node (tensor parallel stays within a node)",
                                 config.tp, rpn, rpn == 1 ? "" : "s"));
  if (config.pp > layout.nodes || layout.nodes % config.pp != 0)
    throw UsageError(fmt::format("--pp {}: must divide the {} node{} (one pipeline stage per block of nodes)",
                                 config.pp, layout.nodes, layout.nodes == 1 ? "" : "s"));
}

ModelParallelResult run_model_parallel(const RunConfig& config, Transport& transport, const Comm& world,
                                       const Layout& layout, const PairsResult* pairs) {
  const ModelParallelConfig& mp = config.model;
  check_model_parallel_layout(mp, layout);
  const int rpn = uniform_ranks_per_node(layout);
  ModelParallelResult result;
  result.tp = mp.tp;
  result.pp = mp.pp;
  result.nodes = layout.nodes;
  result.gpus = layout.ranks;
  result.dp = layout.ranks / (mp.tp * mp.pp);
  result.hidden = mp.hidden;
  result.seq = mp.seq;
  result.micro_batch = mp.micro_batch;
  result.micro_batches = mp.micro_batches;
  result.layers = mp.layers;
  result.dtype = mp.dtype;
  result.compute_ms = config.scale.compute_ms;
  result.activation_bytes = activation_bytes(mp).value_or(0);

  if (mp.tp > 1) {
    // Groups of tp consecutive local ranks, every group of every node at once.
    const int color = layout.node * (rpn / mp.tp) + layout.local_rank / mp.tp;
    const Comm group = world.split(color, layout.local_rank);
    const std::unique_ptr<Transport> sub = transport.split(group, color, layout.local_rank);
    // The activation type when the transport reduces it (bfloat16 on NCCL),
    // else float at the same byte count: the bytes moved are what matter.
    const DType dtype = transport.unsupported(Op::allreduce, mp.dtype, RedOp::sum) ? DType::float32 : mp.dtype;
    const std::size_t elt = element_size(dtype);
    const std::size_t bytes = std::max(result.activation_bytes / elt, std::size_t{1}) * elt;
    const Counts counts = counts_for(Op::allreduce, dtype, bytes, group.size());
    TpLine mine;
    if (sub) {
      const OpSpec spec{Op::allreduce, dtype, RedOp::sum, Placement::out_of_place, 0, counts};
      sub->prepare(spec);
      const Measurement m = measure_op(config, *sub, group, spec);
      if (group.rank() == 0) mine = TpLine{true, m.timing.time_us, m.timing.wrong.value_or(0)};
    }
    std::vector<TpLine> lines = world.allgather_value(mine);
    std::erase_if(lines, [](const TpLine& line) { return !line.speaks; });
    if (world.rank() == 0) {
      TpAllReduce tp;
      tp.bytes = counts.bytes;
      tp.dtype = dtype;
      tp.ranks = mp.tp;
      tp.groups = static_cast<int>(lines.size());
      std::vector<double> times;
      for (const TpLine& line : lines) {
        times.push_back(line.time_us);
        tp.wrong += line.wrong;
      }
      if (!times.empty()) {
        tp.time_us = percentile(times, 0.5);
        tp.time_max_us = *std::max_element(times.begin(), times.end());
      }
      result.tp_allreduce = tp;
    }
  }
  if (world.rank() != 0) return result;

  if (mp.pp > 1) {
    if (pairs == nullptr) {
      result.skipped = "the pipeline projection needs the node-pair matrix, which did not run";
      return result;
    }
    result.pp_link = pipeline_link(*pairs, mp.pp, result.activation_bytes, result.skipped);
    if (!result.pp_link) return result;
  }
  result.projection =
      project_model_parallel(mp, result.compute_ms, result.dp, result.tp_allreduce ? result.tp_allreduce->time_us : 0.0,
                             result.pp_link ? result.pp_link->transfer_us : 0.0);
  return result;
}

}  // namespace fabricbench
