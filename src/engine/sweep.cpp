#include "fabricbench/engine/sweep.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

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

}  // namespace

// Above this time per iteration (the slowest rank's warm-up), per-iteration
// stamps inside the timed batch cost under 0.1% of the figure.
constexpr double per_iteration_stamp_threshold_s = 50e-6;

Measurement measure_op(const RunConfig& config, Transport& transport, const Comm& comm, const OpSpec& spec) {
  std::optional<std::uint64_t> wrong;
  if (config.check) {
    transport.fill(spec);
    transport.barrier();
    transport.run_once(spec);
    std::uint64_t local = transport.verify(spec);
    comm.allreduce_sum(std::span<std::uint64_t>(&local, 1));
    wrong = local;
  }

  const IterationPolicy& policy = config.iterations;
  // Adaptive counts need at least one timed warm-up iteration to size from.
  const int warmup = std::max(policy.warmup, policy.fixed_iters > 0 ? 0 : 1);
  double per_iteration = 0;
  if (warmup > 0) {
    transport.barrier();
    const BatchTiming w = transport.time_batch(spec, warmup, false);
    per_iteration = w.seconds / warmup;
    comm.allreduce_max(std::span<double>(&per_iteration, 1));
  }
  // Rank 0 decides and every rank follows: a rank that decided alone could
  // issue a different number of collectives and hang the job.
  const int iters = comm.broadcast_value(choose_iterations(policy, per_iteration), 0);

  // Each iteration's own time costs a clock read or an event inside the
  // batch. Where an iteration takes long that is noise; where it takes
  // microseconds it would show in the headline, so the distribution then
  // comes from a second batch of the same length.
  const bool stamps_inline = per_iteration >= per_iteration_stamp_threshold_s;
  transport.barrier();
  BatchTiming batch = transport.time_batch(spec, iters, stamps_inline);
  if (!stamps_inline) {
    transport.barrier();
    batch.per_iteration = transport.time_batch(spec, iters, true).per_iteration;
  }
  const double local = batch.seconds / iters;
  double mean = local;
  double low = mean;
  double high = mean;
  comm.allreduce_sum(std::span<double>(&mean, 1));
  mean /= comm.size();
  comm.allreduce_min(std::span<double>(&low, 1));
  comm.allreduce_max(std::span<double>(&high, 1));
  const double first = comm.broadcast_value(local, 0);
  const double headline = headline_seconds(config.rank_time, first, mean, low, high);
  // Per-iteration samples are averaged over ranks, like the headline time,
  // so p50 and p99 read on the same scale as it.
  comm.allreduce_sum(std::span<double>(batch.per_iteration));
  for (double& sample : batch.per_iteration) sample /= comm.size();

  Timing timing = make_timing(spec.op, comm.size(), spec.counts.bytes, headline, low, high, batch.per_iteration, iters);
  timing.wrong = wrong;
  timing.distribution_from_second_batch = !stamps_inline;
  return {timing, local};
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
  return t;
}

std::vector<SweepRecord> with_nic_wire(std::span<const SweepRecord> records, int nodes, int nics_per_node) {
  std::vector<SweepRecord> out(records.begin(), records.end());
  for (SweepRecord& r : out) {
    if (r.op != Op::allreduce || !r.timing) continue;
    const std::optional<std::string> algorithm = r.choice ? r.choice->algorithm : std::nullopt;
    r.nic_wire = nic_wire_rate(r.timing->busbw_gbs, r.ranks, nodes, nics_per_node, algorithm);
  }
  return out;
}

std::vector<SweepRecord> run_sweep(const RunConfig& config, Transport& transport, const Comm& comm,
                                   const SweepListener& listener) {
  const int n = comm.size();
  const bool lead = comm.rank() == 0;
  const std::vector<Point> points = plan(config);
  const std::vector<Placement> wanted = placements(config.inplace);
  std::vector<SweepRecord> records;

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
    if (lead && listener.on_progress) listener.on_progress(done.front(), index, points.size());

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
      transport.prepare(spec);
      for (SweepRecord& r : done) {
        spec.placement = r.placement;
        r.timing = measure_op(config, transport, comm, spec).timing;
        // After the timed batches: the capture's log stays out of them.
        r.choice = transport.capture_choice(spec);
      }
    } else {
      for (SweepRecord& r : done) {
        r.skipped = skip;
        r.bytes = point.bytes;  // the size asked for, since none was measured
      }
    }

    if (lead) {
      if (listener.on_point) listener.on_point(done);
      records.insert(records.end(), done.begin(), done.end());
    }
    const bool last_of_op = index + 1 == points.size() || points[index + 1].op != point.op;
    if (lead && last_of_op && listener.on_op_done) listener.on_op_done(point.op);
  }
  return records;
}

}  // namespace fabricbench
