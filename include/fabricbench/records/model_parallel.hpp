#pragma once
// Model-parallel records: tensor-parallel all-reduce inside a node and the
// pipeline link between stages, and the step they project.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/core/config.hpp"
#include "fabricbench/core/field_list.hpp"
#include "fabricbench/core/types.hpp"

namespace fabricbench {

// The measured TP all-reduce: median over the groups of `ranks` ranks.
struct TpAllReduce {
  std::size_t bytes = 0;         // the size measured (the activation, in whole elements of `dtype`)
  DType dtype = DType::float32;  // the activation type, or float when the transport lacks it
  int ranks = 0;                 // per group
  int groups = 0;                // all at once, every node
  double time_us = 0;            // median over groups
  double time_max_us = 0;        // the slowest group
  std::uint64_t wrong = 0;
};

// The slowest stage-to-stage link of the pipeline, from the pair matrix.
struct PpLink {
  int from = 0;  // node indices
  int to = 0;
  double latency_us = 0;     // the matrix's latency (small messages)
  double bandwidth_gbs = 0;  // per rank: the pair's bandwidth over its ranks per node
  double transfer_us = 0;    // latency + activation bytes / bandwidth
};

// The projection's figures for one step.
struct ModelParallelPoint {
  double compute_ms = 0;       // per GPU: compute / (tp x pp)
  double tp_comm_ms = 0;       // micro-batches x 4 x layers/pp x TP all-reduce
  double pp_comm_ms = 0;       // micro-batches x 2 x stage transfer
  double bubble_ms = 0;        // (pp - 1) x the time of one micro-batch on a stage
  double bubble_fraction = 0;  // (pp - 1) / (micro-batches + pp - 1)
  double step_ms = 0;          // (micro-batches + pp - 1) x the time of one micro-batch on a stage
  double speedup = 0;          // dp x compute / step: over one GPU without communication
  double efficiency = 0;       // speedup / GPUs
};

struct ModelParallelResult {
  int tp = 1;
  int pp = 1;
  int dp = 1;  // replicas: GPUs / (tp x pp)
  int nodes = 0;
  int gpus = 0;
  std::size_t hidden = 0;
  std::size_t seq = 0;
  std::size_t micro_batch = 1;
  int micro_batches = 1;
  int layers = 0;
  DType dtype = DType::bfloat16;
  double compute_ms = 0;  // one replica's step on one GPU
  std::size_t activation_bytes = 0;
  std::optional<TpAllReduce> tp_allreduce;  // when tp > 1
  std::optional<PpLink> pp_link;            // when pp > 1
  std::optional<ModelParallelPoint> projection;
  std::string skipped;  // why there is no projection
};

// hidden x seq x micro-batch x the element size of the dtype, or nullopt
// when that does not fit in a message.
std::optional<std::size_t> activation_bytes(const ModelParallelConfig& config);

// The stage-to-stage transfer: latency + bytes / bandwidth (GB/s), in us.
double pp_transfer_us(double latency_us, double bandwidth_gbs, std::size_t bytes);

// ---- field lists (core/field_list.hpp) ------------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, TpAllReduce>
void fields_of(Self& t, Field&& field) {
  field("bytes", t.bytes);
  field("dtype", t.dtype);
  field("ranks", t.ranks);
  field("groups", t.groups);
  field("time_us", t.time_us);
  field("time_max_us", t.time_max_us);
  field("wrong", t.wrong);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, PpLink>
void fields_of(Self& l, Field&& field) {
  field("from", l.from);
  field("to", l.to);
  field("latency_us", l.latency_us);
  field("bandwidth_gbs", l.bandwidth_gbs);
  field("transfer_us", l.transfer_us);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ModelParallelPoint>
void fields_of(Self& p, Field&& field) {
  field("compute_ms", p.compute_ms);
  field("tp_comm_ms", p.tp_comm_ms);
  field("pp_comm_ms", p.pp_comm_ms);
  field("bubble_ms", p.bubble_ms);
  field("bubble_fraction", p.bubble_fraction);
  field("step_ms", p.step_ms);
  field("speedup", p.speedup);
  field("efficiency", p.efficiency);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ModelParallelResult>
void fields_of(Self& m, Field&& field) {
  field("tp", m.tp);
  field("pp", m.pp);
  field("dp", m.dp);
  field("nodes", m.nodes);
  field("gpus", m.gpus);
  field("hidden", m.hidden);
  field("seq", m.seq);
  field("micro_batch", m.micro_batch);
  field("micro_batches", m.micro_batches);
  field("layers", m.layers);
  field("dtype", m.dtype);
  field("compute_ms", m.compute_ms);
  field("activation_bytes", m.activation_bytes);
  field("tp_allreduce", m.tp_allreduce);
  field("pp_link", m.pp_link);
  field("projection", m.projection);
  field("skipped", fields::omitted(m.skipped));
}

}  // namespace fabricbench
