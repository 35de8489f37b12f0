#include "fabricbench/engine/sweep.hpp"

#include <algorithm>
#include <cmath>

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

}  // namespace

// Above this time per iteration (the slowest rank's warm-up), per-iteration
// stamps inside the timed batch cost under 0.1% of the figure.
constexpr double per_iteration_stamp_threshold_s = 50e-6;

Measurement measure_op(const RunConfig& config, Transport& transport, const Comm& comm, const OpSpec& spec,
                       double share_s) {
  const Window window(share_s);
  const bool lead = comm.rank() == 0;
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
    // The warm-up's mean sizes the first batch only: with a cold first
    // iteration it errs towards fewer iterations, and the precision loop
    // then adds what the spread of the timed iterations calls for.
    const BatchTiming w = transport.time_batch(spec, warmup, false);
    per_iteration = w.seconds / warmup;
    comm.allreduce_max(std::span<double>(&per_iteration, 1));
  }
  // Rank 0 decides and every rank follows: a rank that decided alone could
  // issue a different number of collectives and hang the job.
  int wanted = choose_iterations(policy, per_iteration);
  int first = wanted;
  // Below the stamp threshold each iteration runs twice (the headline batch
  // and the distribution batch): it costs twice its time.
  const double cost_per_iteration = per_iteration * (per_iteration >= per_iteration_stamp_threshold_s ? 1 : 2);
  if (lead && std::isfinite(share_s) && per_iteration > 0) {
    const double fit = std::floor(window.left_s() / cost_per_iteration);
    if (fit < static_cast<double>(first)) first = static_cast<int>(std::max(0.0, fit));
  }
  first = comm.broadcast_value(first, 0);
  Measurement out;
  out.per_iteration_s = per_iteration;
  out.setup_s = window.elapsed_s();
  out.cut = first < std::min(wanted, std::max(1, policy.min_iters));
  if (first == 0) {
    out.skipped = true;
    return out;
  }

  // Each iteration's own time costs a clock read or an event inside the
  // batch. Where an iteration takes long that is noise; where it takes
  // microseconds it would show in the headline, so the distribution then
  // comes from a second batch of the same length.
  const bool stamps_inline = per_iteration >= per_iteration_stamp_threshold_s;
  double local_seconds = 0;
  int iters = 0;
  std::vector<double> samples;
  const Window batches;
  for (int batch_iters = first; batch_iters > 0;) {
    transport.barrier();
    BatchTiming batch = transport.time_batch(spec, batch_iters, stamps_inline);
    if (!stamps_inline) {
      transport.barrier();
      batch.per_iteration = transport.time_batch(spec, batch_iters, true).per_iteration;
    }
    local_seconds += batch.seconds;
    iters += batch_iters;
    // Per-iteration samples are averaged over ranks, like the headline time,
    // so p50 and p99 read on the same scale as it.
    comm.allreduce_sum(std::span<double>(batch.per_iteration));
    for (double& sample : batch.per_iteration) sample /= comm.size();
    samples.insert(samples.end(), batch.per_iteration.begin(), batch.per_iteration.end());
    int next = 0;
    if (lead && !out.cut) {
      const double left = std::min(window.left_s(), policy.max_time_ms * 1e-3 - window.elapsed_s());
      next = more_iterations(policy, iters, relative_half_width(samples), batches.elapsed_s() / iters, left);
    }
    batch_iters = comm.broadcast_value(next, 0);
  }

  const double local = local_seconds / iters;
  double mean = local;
  double low = mean;
  double high = mean;
  comm.allreduce_sum(std::span<double>(&mean, 1));
  mean /= comm.size();
  comm.allreduce_min(std::span<double>(&low, 1));
  comm.allreduce_max(std::span<double>(&high, 1));
  const double rank0 = comm.broadcast_value(local, 0);
  const double headline = headline_seconds(config.rank_time, rank0, mean, low, high);

  out.timing = make_timing(spec.op, comm.size(), spec.counts.bytes, headline, low, high, samples, iters);
  out.timing.wrong = wrong;
  out.timing.distribution_from_second_batch = !stamps_inline;
  out.local_seconds = local;
  return out;
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

std::vector<SweepRecord> with_nic_wire(std::span<const SweepRecord> records, int nodes, int nics_per_node) {
  std::vector<SweepRecord> out(records.begin(), records.end());
  for (SweepRecord& r : out) {
    if (r.op != Op::allreduce || !r.timing) continue;
    const std::optional<std::string> algorithm = r.choice ? r.choice->algorithm : std::nullopt;
    r.nic_wire = nic_wire_rate(r.timing->busbw_gbs, r.ranks, nodes, nics_per_node, algorithm);
  }
  return out;
}

bool skip_before_warmup(const LastMeasured& last, Op op, std::size_t bytes, double share_s, int warmup) {
  if (share_s <= 0) return true;
  // The first point of allgather after a 16 MiB all-reduce's long check was
  // once skipped on that check's account: only a larger size of the same op
  // is bound by what the last one took.
  if (last.bytes == 0 || last.op != op || bytes < last.bytes) return false;
  const double scale = static_cast<double>(bytes) / static_cast<double>(last.bytes);
  const double needed = std::max(last.setup_s, last.seconds * scale * (std::max(warmup, 1) + 1));
  return needed > share_s;
}

std::vector<SweepRecord> run_sweep(const RunConfig& config, Transport& transport, const Comm& comm,
                                   const SweepListener& listener, double seconds, std::vector<Cut>* cuts) {
  const Window phase(seconds);
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
      bool prepared = false;
      for (SweepRecord& r : done) {
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
          // The timed mean, not the warm-up: a cold warm-up alone must not
          // skip the sizes after it.
          if (!m.skipped) last = {point.op, counts.bytes, m.timing.time_us * 1e-6, m.setup_s};
        }
        if (share < 0 || m.skipped) {
          r.skipped = "budget: the time left for the sweep holds no warm-up and iteration of this size";
          r.cut = "budget";
        } else {
          r.timing = m.timing;
          if (m.cut) r.cut = "budget";
          // After the timed batches: the capture's log stays out of them.
          r.choice = transport.capture_choice(spec);
        }
        if (lead && cuts != nullptr && !r.cut.empty())
          cuts->push_back(Cut{Phase::sweep,
                              fmt::format("{} {} {} {}", name(point.op), name(point.dtype), format_size(counts.bytes),
                                          name(r.placement)),
                              r.timing ? "fewer iterations" : "skipped"});
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
      if (listener.on_point) listener.on_point(done);
      records.insert(records.end(), done.begin(), done.end());
    }
    const bool last_of_op = index + 1 == points.size() || points[index + 1].op != point.op;
    if (lead && last_of_op && listener.on_op_done) listener.on_op_done(point.op);
  }
  return records;
}

}  // namespace fabricbench
