#include "fabricbench/engine/sweep.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "fabricbench/core/sizes.hpp"
#include "fabricbench/core/stats.hpp"

namespace fabricbench {
namespace {

struct Point {
  Op op;
  DType dtype;
  std::optional<RedOp> redop;
  std::size_t bytes;
};

std::vector<Point> plan(const RunConfig& config) {
  std::vector<Point> points;
  for (const Op op : config.ops) {
    for (const DType dtype : config.dtypes) {
      std::vector<std::optional<RedOp>> redops;
      if (reduces(op)) {
        for (const RedOp r : config.redops) redops.emplace_back(r);
      } else {
        redops.emplace_back(std::nullopt);
      }
      for (const auto& redop : redops)
        for (const std::size_t bytes : config.sizes) points.push_back({op, dtype, redop, bytes});
    }
  }
  return points;
}

// A measurement's weight for its part of the sweep's time: its bytes, as
// large sizes take longer, and no less than a 256 KiB one's, as small sizes
// are bound by latency and their warm-up and check.
double point_weight(std::size_t bytes) { return static_cast<double>(std::max(bytes, std::size_t{256} << 10)); }

// A measurement's time in the sweep's: add_cost also counts it as a point
// (a measurement taken again is the same point).
void add_time(SweepCost& sweep, const PointCost& point) {
  sweep.fill_s += point.fill_ms * 1e-3;
  sweep.check_s += point.check_ms * 1e-3;
  sweep.warmup_s += point.warmup_ms * 1e-3;
  sweep.timed_s += point.timed_ms * 1e-3;
  sweep.samples_s += point.samples_ms * 1e-3;
  sweep.agree_s += point.agree_ms * 1e-3;
}

void add_cost(SweepCost& sweep, const PointCost& point) {
  add_time(sweep, point);
  ++sweep.points;
}

}  // namespace

namespace {

// Adds the time since the last lap to one part of a PointCost (ms).
class Laps {
 public:
  void operator()(double& part_ms) {
    const SteadyClock::time_point now = SteadyClock::now();
    part_ms += std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
  }

 private:
  SteadyClock::time_point last_ = SteadyClock::now();
};

// Timed batches in the first round: the spread of their means gives the
// precision (per-iteration stamps would let a rare interrupt decide it), and
// four are the fewest whose t quantile (3.18) still leaves a usable
// half-width.
constexpr int batches_per_round = 4;

// The warm-up estimate of one iteration (the slowest rank's): the last
// iteration when two in a row agreed, else the median of those run (the
// first left out when it was the cold one), so one interrupt does not
// decide the count.
double warm_estimate(std::vector<double> times, bool settled, bool first_is_cold) {
  if (times.empty()) return 0;
  if (settled) return times.back();
  if (first_is_cold && times.size() > 1) times.erase(times.begin());
  return percentile(times, 0.5);
}

}  // namespace

Measurement measure_op(const RunConfig& config, Transport& transport, const Comm& comm, const OpSpec& spec,
                       double share_s) {
  const Window window(share_s);
  const bool lead = comm.rank() == 0;
  const IterationPolicy& policy = config.iterations;
  const bool adaptive = policy.fixed_iters <= 0;
  PointCost cost;
  Laps lap;

  // Adaptive counts need at least one timed warm-up iteration to size from.
  const int warmup = std::max(policy.warmup, adaptive ? 1 : 0);
  int warmed = 0;
  // --check-all: every warm-up iteration is verified too, and the last
  // timed one; in place each of them starts from a fresh fill.
  const bool check_all = config.check && config.check_all;
  const bool in_place = spec.placement == Placement::in_place;
  std::uint64_t local_wrong = 0;
  const auto checked_run = [&](bool time_it) {
    if (in_place || !time_it) {
      transport.fill(spec);
      lap(cost.fill_ms);
    }
    double t = 0;
    if (time_it) {
      t = transport.time_batch(spec, 1, false).seconds;
      lap(cost.warmup_ms);
    } else {
      const Window run;
      transport.run_once(spec);
      t = run.elapsed_s();
    }
    local_wrong += transport.verify(spec);
    lap(cost.check_ms);
    return t;
  };
  Measurement out;
  double cold_s = 0;  // the checked run's own time
  if (config.check) {
    // The checked iteration is the first warm-up: the data is filled (only
    // what this point uses), the op runs once and its output is verified,
    // as nccl-tests checks one iteration per size.
    transport.barrier();
    lap(cost.agree_ms);
    cold_s = checked_run(false);
    if (warmup > 0) warmed = 1;
    // Where the check alone outlasted the share, the point ends here,
    // skipped, rather than warming up past it and then timing nothing.
    // (A check that left some of the share goes on: a cold run can take
    // many times a warm one, and the warm-up stops at half the share.)
    std::int32_t skip = lead && std::isfinite(share_s) && window.left_s() <= 0 ? 1 : 0;
    skip = comm.broadcast_value(skip, 0);
    lap(cost.agree_ms);
    if (skip != 0) {
      out.skipped = true;
      out.cut = true;
      out.setup_s = window.elapsed_s();
      out.per_iteration_s = cold_s;
      cost.total_ms = window.elapsed_s() * 1e3;
      out.cost = cost;
      return out;
    }
  }

  // Warm-up: with adaptive counts and a precision, one iteration at a time
  // until two in a row (each the slowest rank's) agree within the precision,
  // at most `warmup` in all. Every rank sees the same maxima, so every rank
  // stops at the same iteration without a broadcast.
  const bool settle = adaptive && policy.precision > 0;
  std::vector<double> warm;
  double warm_s = 0;  // the warm-up iterations' times (each the slowest rank's)
  bool settled = false;
  // Adaptive counts are sized from a timed warm-up: the checked iteration
  // (untimed, and cold) never stands in for it, so with -w 1 one timed
  // warm-up still follows the check.
  const auto more_warmup = [&] { return warmed < warmup || (adaptive && warm.empty()); };
  if (more_warmup()) {
    transport.barrier();
    lap(cost.agree_ms);
    if (settle || check_all) {
      while (more_warmup() && !settled) {
        // The slowest rank's time, and whether the group's rank 0 has spent
        // half its share warming up (one reduction for both): a slow link
        // then goes on to the timed iterations with what is left, rather than
        // warming through the whole share.
        std::array<double, 2> shared{check_all ? checked_run(true) : transport.time_batch(spec, 1, false).seconds, 0.0};
        lap(cost.warmup_ms);
        if (lead && std::isfinite(share_s) && window.elapsed_s() + shared[0] > 0.5 * share_s) shared[1] = 1;
        comm.allreduce_max(std::span<double>(shared));
        lap(cost.agree_ms);
        const double t = shared[0];
        ++warmed;
        settled = settle && !warm.empty() && std::fabs(t - warm.back()) <= policy.precision * t;
        warm.push_back(t);
        // Nor do warm-ups take longer than the timed iterations will
        // (--min-time-ms): a 64 MiB iteration is warm after one, and four
        // more cost as much as its timed batches. A cold first iteration
        // (no check before it) never ends the warm-up alone.
        warm_s += t;
        if (settle && warm.size() >= (config.check ? 1U : 2U) && warm_s >= policy.min_time_ms * 1e-3) settled = true;
        if (shared[1] > 0) settled = true;
      }
    } else {
      const int n = std::max(warmup - warmed, 1);
      double t = transport.time_batch(spec, n, false).seconds / n;
      lap(cost.warmup_ms);
      comm.allreduce_max(std::span<double>(&t, 1));
      lap(cost.agree_ms);
      warmed += n;
      warm.push_back(t);
    }
  }
  cost.warmups = warmed;
  const double per_iteration = warm_estimate(warm, settled, !config.check);

  // Rank 0 decides and every rank follows: a rank that decided alone could
  // issue a different number of collectives and hang the job.
  const int wanted = choose_iterations(policy, per_iteration);
  // Each iteration's own time costs a clock read or an event inside the
  // batch: where that is under 1% of an iteration the timed batches stamp
  // themselves; below, the distribution comes from one more, stamped batch.
  // (Decided on rank 0 with the count: each rank measured its own stamp.)
  const bool stamps_inline = per_iteration > 0 && transport.stamp_cost_s() <= 0.01 * per_iteration;
  // The count in batches: four (fewer when the count is smaller) whose
  // lengths differ by at most one iteration, so the count is exact; a fixed
  // count is one batch, as nccl-tests times it.
  int first_iters = wanted;
  // With a fixed count and the check as its only warm-up, the checked run
  // (cold, so no shorter than a timed one) sizes what fits.
  const double each = per_iteration > 0 ? per_iteration : cold_s;
  if (lead && std::isfinite(share_s) && each > 0) {
    // What fits the share, the distribution's batch included where the
    // batches do not stamp themselves: a quarter of the count (one of four
    // batches), or all of a fixed count's one batch again.
    const double distribution = stamps_inline ? 0.0 : (adaptive ? 0.25 : 1.0);
    const double fit = std::floor(window.left_s() / (each * (1.0 + distribution)));
    if (fit < first_iters) first_iters = static_cast<int>(std::max(0.0, fit));
  }
  // One agreement for the first round: its iterations, and whether the
  // batches stamp each iteration.
  std::array<int, 2> shape{first_iters, stamps_inline ? 1 : 0};
  comm.broadcast(std::as_writable_bytes(std::span<int>(shape)), 0);
  lap(cost.agree_ms);
  out.per_iteration_s = per_iteration;
  out.setup_s = window.elapsed_s();
  const int first = shape[0];
  out.cut = first < std::min(wanted, std::max(1, policy.min_iters));
  const bool stamped = shape[1] != 0;
  if (first == 0) {
    out.skipped = true;
    cost.total_ms = window.elapsed_s() * 1e3;
    out.cost = cost;
    return out;
  }
  const int per_round = adaptive ? std::min(first, batches_per_round) : 1;
  const int batch_length = first / per_round;  // the shortest batch; the second batch is as long

  double local_seconds = 0;
  int iters = 0;
  std::vector<double> samples;
  std::vector<double> batch_means;
  const Window timed(policy.max_time_ms * 1e-3);  // the precision loop's time, from the first batch
  for (int round = first; round > 0;) {
    // `round` iterations in batches of about batch_length each.
    const int batches = std::max(1, round / batch_length);
    for (int b = 0; b < batches; ++b) {
      const int n = round / batches + (b < round % batches ? 1 : 0);
      transport.barrier();
      lap(cost.agree_ms);
      BatchTiming batch = transport.time_batch(spec, n, stamped);
      lap(cost.timed_ms);
      local_seconds += batch.seconds;
      iters += n;
      batch_means.push_back(batch.seconds / n);
      samples.insert(samples.end(), batch.per_iteration.begin(), batch.per_iteration.end());
    }
    cost.batches += batches;
    int next = 0;
    if (lead && !out.cut && adaptive) {
      const double left = std::min(window.left_s(), timed.left_s());
      const double reached = relative_half_width(batch_means);
      const auto batches_so_far = static_cast<int>(batch_means.size());
      if (precision_within_reach(policy, batches_so_far, reached, local_seconds / batches_so_far, left))
        next = more_iterations(policy, iters, reached, local_seconds / iters, left);
    }
    round = comm.broadcast_value(next, 0);
    lap(cost.agree_ms);
  }
  if (!stamped) {
    transport.barrier();
    lap(cost.agree_ms);
    samples = transport.time_batch(spec, batch_length, true).per_iteration;
    lap(cost.samples_ms);
  }
  if (check_all) {
    // Out of place every iteration leaves the same output: the last timed
    // one's is read as it is. In place it is checked from a fresh fill.
    if (in_place) {
      transport.barrier();
      lap(cost.agree_ms);
      checked_run(false);
    } else {
      local_wrong += transport.verify(spec);
      lap(cost.check_ms);
    }
  }
  if (config.check) {
    comm.allreduce_sum(std::span<std::uint64_t>(&local_wrong, 1));
    lap(cost.agree_ms);
  }

  // All the figures over ranks in two reductions: sums (this rank's time,
  // rank 0's, each batch mean and each sample, for means over ranks) and
  // maxima (the slowest rank, and the fastest negated).
  const double local = local_seconds / iters;
  std::vector<double> sums{local, lead ? local : 0.0};
  sums.insert(sums.end(), batch_means.begin(), batch_means.end());
  sums.insert(sums.end(), samples.begin(), samples.end());
  comm.allreduce_sum(std::span<double>(sums));
  std::array<double, 2> extremes{local, -local};
  comm.allreduce_max(std::span<double>(extremes));
  lap(cost.agree_ms);
  const double n = comm.size();
  for (double& v : sums) v /= n;
  const double mean = sums[0];
  const double rank0 = sums[1] * n;
  const std::span<const double> means_over_ranks(sums.data() + 2, batch_means.size());
  const std::span<const double> samples_over_ranks(sums.data() + 2 + batch_means.size(), samples.size());
  const double headline = headline_seconds(config.rank_time, rank0, mean, -extremes[1], extremes[0]);

  out.timing = make_timing(spec.op, comm.size(), spec.counts.bytes, headline, -extremes[1], extremes[0],
                           samples_over_ranks, iters);
  // The precision is the batch means' where there are several batches
  // (make_timing's is the per-iteration samples', all one batch has).
  if (means_over_ranks.size() >= 2) {
    out.timing.precision.reset();
    if (const double h = relative_half_width(means_over_ranks); std::isfinite(h)) out.timing.precision = h;
  }
  if (adaptive && policy.precision > 0)
    out.timing.precision_met = out.timing.precision && *out.timing.precision <= policy.precision;
  if (config.check) out.timing.wrong = local_wrong;
  out.timing.distribution_from_second_batch = !stamped;
  out.local_seconds = local;
  // This rank's own samples (before they were averaged over ranks).
  out.local_min_seconds = samples.empty() ? local : std::min(local, *std::min_element(samples.begin(), samples.end()));
  cost.total_ms = window.elapsed_s() * 1e3;
  cost.agree_ms +=
      cost.total_ms - (cost.fill_ms + cost.check_ms + cost.warmup_ms + cost.timed_ms + cost.samples_ms + cost.agree_ms);
  out.cost = cost;
  return out;
}

bool precision_within_reach(const IterationPolicy& policy, int batches, double precision_reached,
                            double seconds_per_batch, double seconds_left) {
  if (!(policy.precision > 0.0) || batches < 2 || !std::isfinite(precision_reached)) return true;
  if (precision_reached <= policy.precision) return true;
  // hw = t(b-1) cv / sqrt(b): the batches whose half-width meets the target,
  // with the large-sample t (1.96) for them.
  const double ratio = precision_reached / policy.precision * 1.96 / student_t975(batches - 1);
  const double needed = static_cast<double>(batches) * ratio * ratio;
  return (needed - static_cast<double>(batches)) * seconds_per_batch <= seconds_left;
}

int more_iterations(const IterationPolicy& policy, int done, double precision_reached, double seconds_per_iteration,
                    double seconds_left) {
  if (policy.fixed_iters > 0 || !(policy.precision > 0.0) || precision_reached <= policy.precision) return 0;
  if (done >= policy.max_iters || !(seconds_per_iteration > 0.0)) return 0;
  const double fit = std::floor(seconds_left / seconds_per_iteration);
  const double more = std::min({static_cast<double>(done), static_cast<double>(policy.max_iters - done), fit});
  return more > 0 ? static_cast<int>(more) : 0;
}

double headline_seconds(RankTime choice, double rank0_s, double mean_s, double min_s, double max_s) {
  switch (choice) {
    case RankTime::rank0:
      return rank0_s;
    case RankTime::min:
      return min_s;
    case RankTime::max:
      return max_s;
    case RankTime::mean:
      break;
  }
  return mean_s;
}

int choose_iterations(const IterationPolicy& policy, double warmup_seconds_per_iteration) {
  if (policy.fixed_iters > 0) return policy.fixed_iters;
  const int low = std::max(1, policy.min_iters);
  const int high = std::max(low, policy.max_iters);
  if (!(warmup_seconds_per_iteration > 0.0) || !std::isfinite(warmup_seconds_per_iteration)) return high;
  const double wanted = std::ceil(policy.min_time_ms * 1e-3 / warmup_seconds_per_iteration);
  if (wanted >= static_cast<double>(high)) return high;
  return std::max(low, static_cast<int>(wanted));
}

Timing make_timing(Op op, int nranks, std::size_t bytes, double headline_s, double min_s, double max_s,
                   std::span<const double> per_iteration_s, int iterations) {
  Timing t;
  t.time_us = headline_s * 1e6;
  t.time_min_us = min_s * 1e6;
  t.time_max_us = max_s * 1e6;
  const SampleStats s = summarize(per_iteration_s);
  t.p50_us = s.p50 * 1e6;
  t.p99_us = s.p99 * 1e6;
  t.cv = s.cv;
  t.algbw_gbs = headline_s > 0 ? static_cast<double>(bytes) / headline_s / 1e9 : 0.0;
  t.busbw_gbs = t.algbw_gbs * busbw_factor(op, nranks);
  t.iterations = iterations;
  if (const double h = relative_half_width(per_iteration_s); std::isfinite(h)) t.precision = h;
  return t;
}

namespace {

// The last measurement scaled to `bytes` of `op`: its time per iteration, and
// what it needs before its first batch (its setup, or `warmup` + 1
// iterations). Only a larger size of the same op is bound by it.
struct Scaled {
  double per_iteration_s = 0;
  double setup_s = 0;
};

std::optional<Scaled> scaled_from(const LastMeasured& last, Op op, std::size_t bytes, int warmup) {
  if (last.bytes == 0 || last.op != op || bytes < last.bytes) return std::nullopt;
  const double per = last.seconds * static_cast<double>(bytes) / static_cast<double>(last.bytes);
  return Scaled{per, std::max(last.setup_s, per * (std::max(warmup, 1) + 1))};
}

}  // namespace

bool skip_before_warmup(const LastMeasured& last, Op op, std::size_t bytes, double share_s, int warmup) {
  if (share_s <= 0) return true;
  // The first point of allgather after a 16 MiB all-reduce's long check was
  // once skipped on that check's account: only a larger size of the same op
  // is bound by what the last one took.
  const std::optional<Scaled> scaled = scaled_from(last, op, bytes, warmup);
  return scaled && scaled->setup_s > share_s;
}

std::map<Op, double> check_seconds_per_byte(const std::vector<SweepRecord>& records) {
  std::map<Op, std::pair<std::size_t, double>> largest;  // op -> (bytes, seconds per byte)
  for (const SweepRecord& r : records) {
    if (!r.cost || r.bytes == 0 || !(r.cost->fill_ms + r.cost->check_ms > 0)) continue;
    auto& [bytes, per_byte] = largest[r.op];
    if (r.bytes < bytes) continue;
    const double each = (r.cost->fill_ms + r.cost->check_ms) * 1e-3 / static_cast<double>(r.bytes);
    // Of the placements at the largest size, the cheaper check.
    per_byte = r.bytes > bytes ? each : std::min(per_byte, each);
    bytes = r.bytes;
  }
  std::map<Op, double> out;
  for (const auto& [op, figure] : largest) out[op] = figure.second;
  return out;
}

double retake_need_s(double setup_s, double per_iteration_s, int fewest) {
  if (!(per_iteration_s > 0) || !std::isfinite(per_iteration_s)) return 0;
  return std::max(0.0, setup_s) + std::max(fewest, 1) * per_iteration_s * 1.25;
}

double retake_share_s(double need_s, double needs_left_s, double left_s) {
  if (!(need_s > 0) || need_s > left_s) return -1;
  return std::min(left_s, std::max(need_s, left_s * need_s / std::max(needs_left_s, need_s)));
}

bool keep_retaken(std::vector<SweepRecord>& kept, const SweepRecord& again) {
  if (!again.first_iterations) return false;
  const auto same = [&again](const SweepRecord& r) {
    return r.op == again.op && r.dtype == again.dtype && r.redop == again.redop && r.root == again.root &&
           r.bytes == again.bytes && r.placement == again.placement && r.ranks == again.ranks;
  };
  const auto at = std::find_if(kept.begin(), kept.end(), same);
  if (at == kept.end() || at->first_iterations) return false;
  *at = again;
  return true;
}

std::vector<SweepRecord> run_sweep(const RunConfig& config, Transport& transport, const Comm& comm,
                                   const SweepListener& listener, double seconds, std::vector<Cut>* cuts,
                                   SweepCost* cost) {
  const Window phase(seconds);
  SweepCost spent;
  // The listener's time (printing, saving) is the sweep's output.
  const auto timed_call = [&spent](auto&& call) {
    const SteadyClock::time_point start = SteadyClock::now();
    call();
    spent.output_s += std::chrono::duration<double>(SteadyClock::now() - start).count();
  };
  const int n = comm.size();
  const bool lead = comm.rank() == 0;
  const std::vector<Point> points = plan(config);
  const std::vector<Placement> wanted = placements(config.inplace);
  std::vector<SweepRecord> records;
  double weight_left = 0;
  std::size_t measurements_left = points.size() * wanted.size();
  for (const Point& p : points)
    weight_left += static_cast<double>(wanted.size()) * point_weight(counts_for(p.op, p.dtype, p.bytes, n).bytes);
  LastMeasured last;
  // The measurements the budget cut (every rank keeps the same list; rank 0
  // also what each is expected to need), taken again at the end.
  struct Retake {
    std::size_t point = 0;
    std::size_t placement = 0;
    double need_s = 0;
  };
  std::vector<Retake> retakes;
  const auto fewest = [&config](double per_iteration_s) {
    return std::min(choose_iterations(config.iterations, per_iteration_s), std::max(1, config.iterations.min_iters));
  };
  const auto cut_what = [](const SweepRecord& r) {
    return fmt::format("{} {} {} {}", name(r.op), name(r.dtype), format_size(r.bytes), name(r.placement));
  };

  for (std::size_t index = 0; index < points.size(); ++index) {
    const Point& point = points[index];
    const RedOp redop = point.redop.value_or(RedOp::sum);
    const Counts counts = counts_for(point.op, point.dtype, point.bytes, n);

    std::vector<SweepRecord> done;
    for (const Placement placement : wanted) {
      SweepRecord r;
      r.op = point.op;
      r.dtype = point.dtype;
      r.redop = point.redop;
      if (has_root(point.op)) r.root = config.root;
      r.placement = placement;
      r.bytes = counts.bytes;
      r.count = counts.param;
      r.ranks = n;
      done.push_back(r);
    }
    if (lead && listener.on_progress) timed_call([&] { listener.on_progress(done.front(), index, points.size()); });

    std::string skip;
    if (auto why = transport.unsupported(point.op, point.dtype, redop)) {
      skip = *why;
    } else if (counts.param == 0) {
      skip = fmt::format(
          "{} B leaves under {} B of {} per rank ({} ranks; per-rank counts are whole {}-byte units, "
          "as in nccl-tests)",
          point.bytes, per_rank_align_bytes, name(point.dtype), n, per_rank_align_bytes);
      if (!splits_per_rank(point.op)) skip = fmt::format("{} B holds no {} element", point.bytes, name(point.dtype));
    }

    if (skip.empty()) {
      OpSpec spec{point.op, point.dtype, redop, Placement::out_of_place, config.root, counts};
      bool prepared = false;
      for (std::size_t k = 0; k < done.size(); ++k) {
        SweepRecord& r = done[k];
        spec.placement = r.placement;
        // Rank 0 gives this measurement an even part of what is left, or
        // none (-1) when the previous size, scaled, shows its warm-up and
        // one iteration would not fit.
        double share = unlimited_seconds;
        if (lead && std::isfinite(seconds)) {
          // The larger of an even part and a part by bytes: small sizes
          // use little of theirs, and what they leave flows on.
          share = std::max(0.0, phase.left_s()) *
                  std::max(point_weight(counts.bytes) / std::max(weight_left, 1.0),
                           1.0 / static_cast<double>(std::max<std::size_t>(measurements_left, 1)));
          if (skip_before_warmup(last, point.op, counts.bytes, share, config.iterations.warmup)) share = -1;
        }
        share = comm.broadcast_value(share, 0);
        weight_left -= point_weight(counts.bytes);
        --measurements_left;
        Measurement m;
        if (share >= 0) {
          if (!prepared) transport.prepare(spec);
          prepared = true;
          m = measure_op(config, transport, comm, spec, share);
          add_cost(spent, m.cost);
          // The timed mean, not the warm-up: a cold warm-up alone must not
          // skip the sizes after it.
          if (!m.skipped) last = {point.op, counts.bytes, m.timing.time_us * 1e-6, m.setup_s};
        }
        if (share < 0 || m.skipped || m.cut) {
          Retake retake{index, k, 0.0};
          if (lead && m.skipped) {
            retake.need_s = retake_need_s(m.setup_s, m.per_iteration_s, fewest(m.per_iteration_s));
          } else if (lead && m.cut) {
            retake.need_s = retake_need_s(m.setup_s, m.timing.time_us * 1e-6, fewest(m.timing.time_us * 1e-6));
          } else if (const std::optional<Scaled> scaled =
                         lead ? scaled_from(last, point.op, counts.bytes, config.iterations.warmup) : std::nullopt) {
            // Skipped before its warm-up: the last size of its op, scaled.
            retake.need_s = retake_need_s(scaled->setup_s, scaled->per_iteration_s, fewest(scaled->per_iteration_s));
          }
          retakes.push_back(retake);
        }
        if (share < 0 || m.skipped) {
          r.skipped = "budget: the time left for the sweep holds no warm-up and iteration of this size";
          r.cut = "budget";
        } else {
          r.timing = m.timing;
          r.cost = m.cost;
          if (m.cut) r.cut = "budget";
          // After the timed batches: the capture's log stays out of them.
          r.choice = transport.capture_choice(spec);
        }
        if (lead && cuts != nullptr && !r.cut.empty())
          cuts->push_back(Cut{Phase::sweep, cut_what(r), r.timing ? "fewer iterations" : "skipped"});
      }
    } else {
      weight_left -= static_cast<double>(done.size()) * point_weight(counts.bytes);
      measurements_left -= done.size();
      for (SweepRecord& r : done) {
        r.skipped = skip;
        r.bytes = point.bytes;  // the size asked for, since none was measured
      }
    }

    if (lead) {
      if (listener.on_point) timed_call([&] { listener.on_point(done); });
      records.insert(records.end(), done.begin(), done.end());
    }
  }
  // What the budget cut is measured again, in the sweep's order, where the
  // time the sweep has left holds what it is expected to need: shares by
  // bytes are a plan, and a healthy 4 MiB all-reduce whose check and warm-up
  // took most of its share on a loaded core was cut to 3 iterations while the
  // sweep ended with half its time unused. The better measurement of the two
  // is kept (the one with more iterations), and its cut is dropped once it
  // holds its fewest.
  double needs_left = 0;
  for (const Retake& t : retakes) needs_left += t.need_s;
  for (const Retake& t : retakes) {
    double share = -1;
    if (lead) {
      share = retake_share_s(t.need_s, needs_left, phase.left_s());
      needs_left -= t.need_s;
    }
    if (comm.broadcast_value(share, 0) < 0) continue;
    const Point& point = points[t.point];
    const OpSpec spec{point.op,
                      point.dtype,
                      point.redop.value_or(RedOp::sum),
                      wanted[t.placement],
                      config.root,
                      counts_for(point.op, point.dtype, point.bytes, n)};
    transport.prepare(spec);
    const Measurement m = measure_op(config, transport, comm, spec, share);
    add_time(spent, m.cost);
    std::optional<AlgorithmChoice> choice;
    if (!m.skipped) choice = transport.capture_choice(spec);
    if (!lead) continue;
    const std::span<SweepRecord> at(records.data() + t.point * wanted.size(), wanted.size());
    SweepRecord& r = at[t.placement];
    const int first = r.timing ? r.timing->iterations : 0;
    if (m.skipped || m.timing.iterations <= first) continue;
    r.first_iterations = first;
    r.timing = m.timing;
    r.cost = m.cost;
    r.choice = std::move(choice);
    r.skipped.clear();
    r.cut = m.cut ? "budget" : "";
    if (cuts != nullptr) {
      const auto listed = std::find_if(cuts->begin(), cuts->end(),
                                       [&](const Cut& c) { return c.phase == Phase::sweep && c.what == cut_what(r); });
      if (listed != cuts->end() && m.cut) listed->action = "fewer iterations";
      if (listed != cuts->end() && !m.cut) cuts->erase(listed);
    }
    if (listener.on_retaken) timed_call([&] { listener.on_retaken(at); });
  }

  if (lead && cost != nullptr) {
    spent.wall_s = phase.elapsed_s();
    spent.other_s = std::max(0.0, spent.wall_s - (spent.fill_s + spent.check_s + spent.warmup_s + spent.timed_s +
                                                  spent.samples_s + spent.agree_s + spent.output_s));
    *cost = spent;
  }
  return records;
}

}  // namespace fabricbench
