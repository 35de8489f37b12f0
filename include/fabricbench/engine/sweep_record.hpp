#pragma once
// What the sweep measures at one point: plain records the engine fills and the
// result (model/result.hpp) collects; analysis reads them, writers format them.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fabricbench/core/types.hpp"

namespace fabricbench {

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
  // The mean's relative 95% confidence half-width reached (0.01: within 1%);
  // nullopt with fewer than 2 iterations.
  std::optional<double> precision;
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
};

}  // namespace fabricbench
