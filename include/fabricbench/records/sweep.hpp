#pragma once
// What the sweep measures at one point: plain records the engine fills and the
// result (results/result.hpp) collects; analysis reads them, printers format them.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fabricbench/core/field_list.hpp"
#include "fabricbench/core/types.hpp"

namespace fabricbench {

// What each NIC carried in a multi-node all-reduce (analysis/wire_rate.hpp
// says how it is derived from busbw); `m` is the NICs per node.
struct NicWireRate {
  std::optional<double> gbs;  // per NIC, each way, GB/s; nullopt when no NIC carried the data
  std::string basis;          // ring | in_network | lower_bound | nvlink
  int nics_per_node = 0;      // m
};

// The library's choice at one measured point. Either both names are set (a
// symmetric kernel sets the algorithm only), or `note` says why not.
struct AlgorithmChoice {
  std::optional<std::string> algorithm;  // NCCL's name: RING, TREE, NVLS, NVLS_TREE, COLLNET_DIRECT, ...
  std::optional<std::string> protocol;   // LL, LL128, SIMPLE
  std::string note;                      // why there is none, or what else NCCL said (a symmetric kernel)
  bool operator==(const AlgorithmChoice&) const = default;
};

// One measured placement of one sweep point. Times in microseconds.
struct Timing {
  double time_us = 0;      // each rank's batch time / iters, combined over ranks (the headline: mean, or --rank-time)
  double time_min_us = 0;  // fastest rank
  double time_max_us = 0;  // slowest rank
  double p50_us = 0;       // per-iteration times, each the mean over ranks
  double p99_us = 0;
  double cv = 0;
  double algbw_gbs = 0;  // bytes / time_us, GB = 1e9 bytes
  double busbw_gbs = 0;  // algbw * busbw_factor
  int iterations = 0;
  // p50/p99 came from a second batch of the same length (small messages,
  // where a stamp per iteration would show in the headline). Known while the
  // run measures; not part of the saved result.
  bool distribution_from_second_batch = false;
  std::optional<std::uint64_t> wrong;  // summed over ranks; nullopt when not checked
  // The mean's relative 95% confidence half-width reached (0.01: within 1%),
  // from the spread of the timed batches' means; nullopt with fewer than 2
  // batches.
  std::optional<double> precision;
  // Whether `precision` met --precision: nullopt when no target applied
  // (--precision 0, fixed --iters); false flags a figure less certain than
  // asked, whatever stopped it (the time cap, the budget, max_iters).
  std::optional<bool> precision_met;
};

// Where one measurement's wall time went, on the group's rank 0 (ms): the
// data fill and check (its checked iteration is the first warm-up), the
// further warm-ups, the timed batches, the second batch that stamps each
// iteration (small sizes only), and the barriers and agreements between
// them (what is left of the total).
struct PointCost {
  double fill_ms = 0;
  double check_ms = 0;
  double warmup_ms = 0;
  double timed_ms = 0;
  double samples_ms = 0;
  double agree_ms = 0;
  double total_ms = 0;
  int warmups = 0;  // warm-up iterations run, the checked one included
  int batches = 0;  // timed batches
};

// One (op, dtype, redop, placement, size) point.
struct SweepRecord {
  Op op = Op::allreduce;
  DType dtype = DType::float32;
  std::optional<RedOp> redop;  // reducing ops only
  std::optional<int> root;     // rooted ops only
  Placement placement = Placement::out_of_place;
  std::size_t bytes = 0;         // reported size S
  std::size_t count = 0;         // elements per call, as nccl-tests' count column
  int ranks = 0;                 // ranks in the group that ran it
  std::optional<Timing> timing;  // nullopt when skipped
  std::string skipped;           // why, when skipped
  std::string cut;               // "budget" when the time budget skipped it or cut its iterations
  // Measured again with the time the sweep had left, after the budget cut
  // it: the first measurement's iterations (0 when it was skipped).
  std::optional<int> first_iterations;
  // What the library chose at this point (NCCL's algorithm and protocol), or
  // why that is not known; measured points only.
  std::optional<AlgorithmChoice> choice;
  // Multi-node all-reduce: what each NIC carried (analysis/wire_rate.hpp).
  std::optional<NicWireRate> nic_wire;
  // Where the measurement's time went; measured points only.
  std::optional<PointCost> cost;
};

// Where a sweep's wall time went (s, rank 0): the measurements' parts summed
// (PointCost), what the output took (printing and saving between points),
// and the rest (buffers, the library's choice, planning).
struct SweepCost {
  double wall_s = 0;
  double fill_s = 0;
  double check_s = 0;
  double warmup_s = 0;
  double timed_s = 0;
  double samples_s = 0;
  double agree_s = 0;
  double output_s = 0;
  double other_s = 0;
  int points = 0;  // measurements (placements) made
  // timed_s / wall_s: the share of the sweep spent in timed batches.
  [[nodiscard]] double timed_share() const { return wall_s > 0 ? timed_s / wall_s : 0.0; }
};

// ---- field lists (core/field_list.hpp) ------------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, Timing>
void fields_of(Self& t, Field&& field) {
  field("time_us", t.time_us);
  field("time_min_us", t.time_min_us);
  field("time_max_us", t.time_max_us);
  field("p50_us", t.p50_us);
  field("p99_us", t.p99_us);
  field("cv", t.cv);
  field("algbw_gbs", t.algbw_gbs);
  field("busbw_gbs", t.busbw_gbs);
  field("iterations", t.iterations);
  field("precision", fields::omitted(t.precision));
  field("precision_met", fields::omitted(t.precision_met));
  field("wrong", t.wrong);
}

// Where a measured point's time went (rank 0's clock, ms).
template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, PointCost>
void fields_of(Self& c, Field&& field) {
  field("spent_fill_ms", c.fill_ms);
  field("spent_check_ms", c.check_ms);
  field("spent_warmup_ms", c.warmup_ms);
  field("spent_timed_ms", c.timed_ms);
  field("spent_samples_ms", c.samples_ms);
  field("spent_agree_ms", c.agree_ms);
  field("spent_total_ms", c.total_ms);
  field("warmups", c.warmups);
  field("batches", c.batches);
}

// Where the sweep's time went (rank 0, s); timed_share is derived.
template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, SweepCost>
void fields_of(Self& c, Field&& field) {
  field("wall_s", c.wall_s);
  field("points", c.points);
  field("fill_s", c.fill_s);
  field("check_s", c.check_s);
  field("warmup_s", c.warmup_s);
  field("timed_s", c.timed_s);
  field("samples_s", c.samples_s);
  field("agree_s", c.agree_s);
  field("output_s", c.output_s);
  field("other_s", c.other_s);
  field("timed_share", fields::written(c.timed_share()));
}

// A measured point carries its timing's members; a skipped one says why.
// Either may say the budget cut it (fewer iterations, or skipped).
template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, SweepRecord>
void fields_of(Self& r, Field&& field) {
  field("op", r.op);
  field("dtype", r.dtype);
  field("redop", r.redop);
  field("root", r.root);
  field("placement", r.placement);
  field("bytes", r.bytes);
  field("count", r.count);
  field("ranks", r.ranks);
  field(fields::inlined(r.timing));
  field("cut", fields::omitted(r.cut));
  field(fields::inlined(r.choice));
  field(fields::inlined(r.nic_wire));
  field(fields::inlined(r.cost));
  field("skipped", fields::omitted(r.skipped));
  field("first_iterations", fields::omitted(r.first_iterations));
}

// NCCL's algorithm and protocol at a measured point: null with the reason in
// algorithm_note when not known (the MPI transport, point-to-point ops).
template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, AlgorithmChoice>
void fields_of(Self& c, Field&& field) {
  field("algorithm", c.algorithm);
  field("protocol", c.protocol);
  field("algorithm_note", fields::empty_as_null(c.note));
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, NicWireRate>
void fields_of(Self& w, Field&& field) {
  field("nic_wire_gbs", w.gbs);
  field("nic_wire_basis", w.basis);
  field("nic_wire_nics", w.nics_per_node);
}

}  // namespace fabricbench
