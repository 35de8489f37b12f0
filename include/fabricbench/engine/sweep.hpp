#pragma once
// The sweep engine: ops x dtypes x redops x sizes x placements on one
// transport. Every count is decided on rank 0 and broadcast, so all ranks
// issue the same operations.

#include <functional>
#include <map>
#include <span>
#include <vector>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/core/budget.hpp"
#include "fabricbench/core/config.hpp"
#include "fabricbench/records/sweep.hpp"
#include "fabricbench/transport/transport.hpp"

namespace fabricbench {

// Timed iterations for a measured warm-up time per iteration: enough to fill
// min_time_ms, within [min_iters, max_iters]; or fixed_iters when set.
int choose_iterations(const IterationPolicy& policy, double warmup_seconds_per_iteration);

// One measured placement: the group's figures (the same on every member) and
// this rank's own batch time per iteration.
struct Measurement {
  Timing timing;
  double local_seconds = 0;
  double local_min_seconds = 0;  // this rank's fastest timed iteration (latency under contention)
  double per_iteration_s = 0;    // the warm-up's estimate, the slowest rank's
  double setup_s = 0;            // on the group's rank 0: the check and warm-up, before the first batch
  bool cut = false;              // fewer iterations than asked, to keep within `share_s`
  bool skipped = false;          // not even one iteration fitted: no timing
  PointCost cost;                // where its time went (this rank's clock)
};

// Measures `spec` on every member of `comm` (the transport's group): the data check when enabled (its checked
// iteration is the first warm-up), warm-up iterations until two in a row agree within the precision (at most the
// policy's warm-up, and at least one timed one for adaptive counts), the iteration count decided on the group's
// rank 0 and split into four or more batches, and more batches until the spread of their means puts the mean within
// the policy's precision or its max_time_ms (counted from the first batch) is up. `share_s` (read on the group's
// rank 0) bounds the whole measurement: a count that does not fit is cut. Collective over the group.
Measurement measure_op(const RunConfig& config, Transport& transport, const Comm& comm, const OpSpec& spec,
                       double share_s = unlimited_seconds);

// The iterations to add after `done` of them gave a relative half-width of
// `precision_reached`: none once the policy's precision is met, the count is
// at max_iters, or `seconds_left` holds no more; otherwise up to as many
// again (doubling), within both bounds.
int more_iterations(const IterationPolicy& policy, int done, double precision_reached, double seconds_per_iteration,
                    double seconds_left);

// Whether more batches can still bring the mean within the policy's
// precision in `seconds_left`: with the batch means' spread as measured over
// `batches` batches (half-width `precision_reached`), the half-width shrinks
// as t / sqrt(batches), so the batches needed are known; when they do not fit
// the time left, more batches cannot make the figure as certain as asked and
// the loop stops there (the point is flagged precision_met false). True when
// nothing is known yet (one batch, no target).
bool precision_within_reach(const IterationPolicy& policy, int batches, double precision_reached,
                            double seconds_per_batch, double seconds_left);

// Callbacks, called on rank 0 only.
struct SweepListener {
  // All placements of one (op, dtype, redop, size) point, as they complete.
  std::function<void(std::span<const SweepRecord>)> on_point;
  // Before each point: position and total, for a progress line.
  std::function<void(const SweepRecord&, std::size_t done, std::size_t total)> on_progress;
  // A point again, after one of its placements the budget cut was measured
  // again with the time the sweep had left (that record's first_iterations
  // says what the first measurement had).
  std::function<void(std::span<const SweepRecord>)> on_retaken;
};

// The last measurement a sweep made, for telling whether the next can fit
// before spending a warm-up on it.
struct LastMeasured {
  Op op = Op::allreduce;
  std::size_t bytes = 0;  // 0: nothing measured yet
  double seconds = 0;     // its time per iteration
  double setup_s = 0;     // what it spent before its first batch (check, warm-up)
};

// Whether a point of `op` at `bytes` with `share_s` seconds is skipped
// before its warm-up: when the share is empty, or the last measurement was
// of the same op at a size no larger and this one, scaled from it, needs
// more than the share (its setup, or `warmup` + 1 iterations). Another op
// or a smaller size is bound by neither, and is left to its warm-up.
bool skip_before_warmup(const LastMeasured& last, Op op, std::size_t bytes, double share_s, int warmup);

// Per op, the seconds per byte of its check (the fill, one run and the
// verify) at the largest size the sweep measured it with a check, from
// `records`' costs (rank 0's clock): what a later phase's first step at
// another size can expect its check alone to take. Ops the sweep did not
// measure so are absent.
std::map<Op, double> check_seconds_per_byte(const std::vector<SweepRecord>& records);

// What a measurement cut by the budget is expected to need for its fewest
// iterations (rank 0's figures): its setup (check and warm-up) and `fewest`
// iterations of `per_iteration_s`, with the distribution's batch (a
// quarter more). 0 when its time per iteration is not known.
double retake_need_s(double setup_s, double per_iteration_s, int fewest);

// The share of `left_s` a retake expecting `need_s` is given when the
// retakes still to come (it included) expect `needs_left_s`: its part of
// what is left by need, and never less than its need; -1 when its need is
// unknown or more than is left.
double retake_share_s(double need_s, double needs_left_s, double left_s);

// Runs the sweep on every rank of `comm` (the same group as the transport).
// Returns the records on rank 0 (empty elsewhere).
// `seconds` (read on rank 0) bounds the whole sweep: each point gets an even
// part of what is left; a point that cannot fit is skipped, or measured with
// fewer iterations, with the cut "budget" (and appended to `cuts` on rank 0).
// `cost` (rank 0) receives where the sweep's time went, the listener's
// callbacks (printing, saving) as its output.
// Puts `again`, a record measured again (first_iterations set), in place of
// the record of the same point and placement in `kept`; false when there is
// none, or it is already that measurement.
bool keep_retaken(std::vector<SweepRecord>& kept, const SweepRecord& again);

std::vector<SweepRecord> run_sweep(const RunConfig& config, Transport& transport, const Comm& comm,
                                   const SweepListener& listener, double seconds = unlimited_seconds,
                                   std::vector<Cut>* cuts = nullptr, SweepCost* cost = nullptr);

// The headline time of a measurement from the ranks' times (rank 0's, their
// mean, min or max), as --rank-time (nccl-tests' -a) chooses.
double headline_seconds(RankTime choice, double rank0_s, double mean_s, double min_s, double max_s);

// Fills timing figures from per-rank times: the headline (headline_seconds)
// and the min/max over ranks of the batch time per iteration (seconds),
// per-iteration samples averaged over ranks (seconds), and the bandwidth of
// `bytes` with the op's factor.
Timing make_timing(Op op, int nranks, std::size_t bytes, double headline_s, double min_s, double max_s,
                   std::span<const double> per_iteration_s, int iterations);

}  // namespace fabricbench
