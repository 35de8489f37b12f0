#pragma once
// Projected model-parallel training: tensor parallel (TP) within a node and
// pipeline parallel (PP) across nodes, from what this cluster measured. The
// TP all-reduce is measured at the exact activation size on groups of `tp`
// ranks within each node (every group of every node at once, through the
// transport's split, as the ladder does); the pipeline's stage-to-stage
// transfer comes from the node-pair matrix (latency + bytes / bandwidth).
//
// Assumptions (the README gives them with the formulas): Megatron-style TP,
// two all-reduces of the activation (hidden x seq x micro-batch elements) per
// layer in the forward pass and two in the backward pass, none hidden under
// compute; compute divides evenly over the tp x pp GPUs of a replica; each TP
// rank sends the whole activation to its counterpart on the next stage, once
// forward and once backward per micro-batch; a GPipe / 1F1B schedule whose
// bubble is (pp-1)/(m+pp-1) of the step; data-parallel gradient
// synchronisation between replicas is not included.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/comm/layout.hpp"
#include "fabricbench/core/config.hpp"
#include "fabricbench/core/types.hpp"
#include "fabricbench/engine/pairs.hpp"
#include "fabricbench/records/model_parallel.hpp"
#include "fabricbench/transport/transport.hpp"

namespace fabricbench {

// The formulas, pure: `tp_allreduce_us` is one TP all-reduce (ignored when
// tp is 1), `pp_transfer_us` one stage-to-stage transfer (ignored when pp is 1).
ModelParallelPoint project_model_parallel(const ModelParallelConfig& config, double compute_ms, int dp,
                                          double tp_allreduce_us, double pp_transfer_us);

// The slowest link between consecutive stages: stage s is the s-th block of
// nodes / pp consecutive nodes, node j of a block sends to node j of the
// next. nullopt with `why` set when a link the pipeline needs has no figure.
std::optional<PpLink> pipeline_link(const PairsResult& pairs, int pp, std::size_t bytes, std::string& why);

// Refuses (UsageError, exit 2) a tp that does not divide the ranks of each
// node, or a pp that does not divide the nodes. Every rank reaches the same
// verdict from the same layout.
void check_model_parallel_layout(const ModelParallelConfig& config, const Layout& layout);

// Collective over `world`: measures the TP all-reduce (when tp > 1); on
// world rank 0 the result is complete, with the pipeline link taken from
// `pairs` (rank 0's, may be null when pp is 1).
ModelParallelResult run_model_parallel(const RunConfig& config, Transport& transport, const Comm& world,
                                       const Layout& layout, const PairsResult* pairs);

}  // namespace fabricbench
