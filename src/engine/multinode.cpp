#include "fabricbench/engine/multinode.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "fabricbench/core/sizes.hpp"
#include "fabricbench/engine/sweep.hpp"

namespace fabricbench {
namespace {

constexpr DType fabric_dtype = DType::float32;

// The small exchange's timed iterations, at least: its latency is the
// fastest of them, and the fastest of four (-n 4) is still a scheduler's
// hiccup now and then where ranks share cores (a healthy pair measured 40 us
// beside 7 us ones, and was named a slow link). Fifty cost under a
// millisecond on a healthy link.
constexpr int latency_iterations = 50;

}  // namespace

std::vector<LadderJob> ladder_jobs(const ScaleConfig& scale, std::size_t bytes, bool with_sweep) {
  std::vector<LadderJob> jobs;
  const auto add = [&jobs](Op op, std::size_t b) {
    b = b / element_size(fabric_dtype) * element_size(fabric_dtype);
    if (b == 0) return;
    for (const LadderJob& j : jobs)
      if (j.op == op && j.bytes == b) return;
    jobs.push_back({op, b});
  };
  for (const Op op : scale.ops) {
    if (scale.sweep && with_sweep)
      for (std::size_t b = std::max<std::size_t>(bytes / 64, 4096); b < bytes; b *= 4) add(op, b);
    add(op, bytes);
  }
  if (scale.grad_bytes > 0) {
    if (scale.sharded) {
      add(Op::reducescatter, scale.grad_bytes);
      add(Op::allgather, scale.grad_bytes);
    } else {
      add(Op::allreduce, scale.grad_bytes);
    }
  }
  return jobs;
}

namespace {

// This rank's measurement, gathered to every rank as its bytes: only a
// group's first rank speaks for its group.
struct GroupLine {
  bool speaks = false;
  int color = -1;
  double time_us = 0;
  double busbw_gbs = 0;
  std::uint64_t wrong = 0;
  int ranks = 0;
  int cut = 0;  // fewer iterations than asked, to keep within the budget
};

std::vector<GroupLine> gather_group_lines(const Comm& world, const GroupLine& mine) {
  std::vector<GroupLine> lines = world.allgather_value(mine);
  std::erase_if(lines, [](const GroupLine& line) { return !line.speaks; });
  return lines;
}

// What one round of pair exchanges measured, on world rank 0: per world
// rank, its time and the bytes one direction moved (0: not measured).
struct RoundFigures {
  std::vector<double> seconds;
  std::vector<std::size_t> bytes;
};

RoundFigures gather_figures(const Comm& world, double seconds, std::size_t bytes) {
  const auto n = static_cast<std::size_t>(world.size());
  std::vector<double> both(2 * n, 0.0);
  both[static_cast<std::size_t>(world.rank())] = seconds;
  both[n + static_cast<std::size_t>(world.rank())] = static_cast<double>(bytes);
  world.allreduce_sum(both);
  RoundFigures out;
  out.seconds.assign(both.begin(), both.begin() + static_cast<std::ptrdiff_t>(n));
  for (std::size_t r = 0; r < n; ++r) out.bytes.push_back(static_cast<std::size_t>(both[n + r]));
  return out;
}

// The ladder and the pair rounds measure float sums out of place.
Measurement measure_fabric_op(const RunConfig& config, Transport& transport, const Comm& group, Op op,
                              const Counts& counts, double share_s) {
  const OpSpec spec{op, fabric_dtype, RedOp::sum, Placement::out_of_place, 0, counts};
  transport.prepare(spec);
  return measure_op(config, transport, group, spec, share_s);
}

// Two checked runs of `spec` on `transport` (fill, run, verify), each
// timed: the first on buffers just made (it pays for their pages, as the
// measurement's check will on its own), the second warm. The wrong elements
// found go to `wrong`.
struct CheckedRuns {
  double cold_s = 0;
  double warm_s = 0;
};

CheckedRuns checked_runs(Transport& transport, const OpSpec& spec, std::uint64_t* wrong) {
  std::array<double, 2> t{};
  for (double& each : t) {
    const Window checked;
    transport.fill(spec);
    transport.run_once(spec);
    const std::uint64_t found = transport.verify(spec);
    if (wrong != nullptr) *wrong += found;
    each = checked.elapsed_s();
  }
  return {t[0], t[1]};
}

// The message a pair measures its bandwidth with, and its probe's figure.
struct PairMessage {
  Counts counts;
  std::size_t probe_bytes = 0;  // 0: no probe ran (no budget, or the message is the probe's size)
  double probe_s = 0;           // this rank's mean timed probe exchange
  bool probe_only = false;      // not even the probe's size fits again: the probe is the figure
  std::uint64_t wrong = 0;      // wrong elements the probe's check found on this rank
};

// The message a pair measures its bandwidth with inside `share_s` (counted
// from `since`): the full `counts`, or, on a link too slow for the full
// message's check, warm-up and two timed exchanges to fit, the largest
// half, quarter, ... of it that fits in what the probe left of the share,
// down to the probe's size; where not even that fits, the probe itself is
// the pair's figure. The probe is a 64th of the message (64 KiB at least):
// the fastest of two checked exchanges (fill, run, verify: what the
// measurement's check costs a byte) and of three timed ones, every pair of the
// round at once: a rank that waited for a core (ranks sharing cores, a busy
// neighbour) slows only some of them, and the rate, latency included, still
// errs small. The pairs with the same `size_key` (the rails of one node
// pair, which share its links) take the slowest of their probes, so they
// measure alike; what is left of the share is the slowest rank's, probes,
// buffers and waiting included (a round of 16 ranks on 2 cores spent twice
// its bandwidth half before its first full-size exchange). Collective over
// `world`; without a budget the full message, with no probe.
PairMessage message_within(Transport* sub, const Comm& group, const Comm& world, int size_key, int keys,
                           const Counts& counts, double share_s, const Window& since) {
  constexpr std::size_t least = std::size_t{64} << 10;
  PairMessage out{counts};
  const std::size_t probe_bytes = std::max(counts.bytes / 64, least);
  if (!std::isfinite(share_s) || probe_bytes >= counts.bytes) return out;
  const Counts probe = counts_for(Op::sendrecv, fabric_dtype, probe_bytes, 2);
  constexpr int probes = 3;
  const auto k = static_cast<std::size_t>(std::max(keys, 1));
  // Per key: the slowest timed probe, the slowest checked one; then the
  // slowest rank's time since the round's bandwidth half began.
  std::vector<double> slowest(2 * k + 1, 0.0);
  const bool keyed = sub != nullptr && size_key >= 0 && size_key < keys;
  if (sub != nullptr) {
    const OpSpec spec{Op::sendrecv, fabric_dtype, RedOp::sum, Placement::out_of_place, 0, probe};
    sub->prepare(spec);
    sub->barrier();
    // The faster of the two checked runs: scaled 64 times to the full
    // message, one wait for a core halved a healthy pair's message.
    const CheckedRuns runs = checked_runs(*sub, spec, &out.wrong);
    std::array<double, 2> t{0.0, std::min(runs.cold_s, runs.warm_s)};
    const BatchTiming batch = sub->time_batch(spec, probes, true);
    t[0] = batch.per_iteration.empty() ? batch.seconds / probes
                                       : *std::min_element(batch.per_iteration.begin(), batch.per_iteration.end());
    out.probe_bytes = probe.bytes;
    out.probe_s = batch.seconds / probes;
    group.allreduce_max(std::span<double>(t));
    if (keyed) {
      slowest[static_cast<std::size_t>(size_key)] = t[0];
      slowest[k + static_cast<std::size_t>(size_key)] = t[1];
    }
  }
  slowest[2 * k] = since.elapsed_s();
  world.quiet_barrier();  // the ranks that sit out, or are done, leave the cores to those still probing
  world.allreduce_max(std::span<double>(slowest));
  if (!keyed) return out;
  const double t = slowest[static_cast<std::size_t>(size_key)];
  const double check_s = slowest[k + static_cast<std::size_t>(size_key)];
  // A byte's cost at the probe's rates: its check, a warm-up and two timed
  // exchanges.
  const double s_per_byte = (check_s + 3 * t) / static_cast<double>(probe.bytes);
  const double left_s = share_s - slowest[2 * k];
  std::size_t bytes = counts.bytes;
  while (bytes / 2 >= probe.bytes && s_per_byte * static_cast<double>(bytes) > left_s) bytes /= 2;
  out.probe_only = s_per_byte * static_cast<double>(bytes) > left_s;
  if (bytes != counts.bytes) out.counts = counts_for(Op::sendrecv, fabric_dtype, bytes, 2);
  return out;
}

// Which pairs of a round size their message together (`key`, -1 for
// none; below `keys`).
struct SizeKey {
  int key = -1;
  int keys = 1;
};

// Which parts of a round of pair exchanges run: the large message's
// (bandwidth) and the small one's (latency), each in half the share, or one
// of them in all of it.
enum class Halves { both, bandwidth, latency };

// What one round of pair exchanges cut to keep within its share.
struct RoundCuts {
  int fewer = 0;    // measurements with fewer iterations (or none)
  int smaller = 0;  // bandwidths measured with a smaller message
};

// One round of pair exchanges: the members with equal color (two ranks) run
// the send/recv op at the large and the small size (the large one made
// smaller on a link too slow for it to fit the share); every rank's own
// time and bytes are gathered and handed, on world rank 0, to `record`.
// Returns what the budget cut (on every rank).
template <typename Record>
RoundCuts exchange_round(const RunConfig& config, Transport& transport, const Comm& world, int color, int key,
                         const Record& record, std::uint64_t& wrong_total, double share_s, Halves halves = Halves::both,
                         SizeKey size_key = {}) {
  const Comm group = world.split(color, key);
  const std::unique_ptr<Transport> sub = transport.split(group, color, key);
  RoundCuts cuts;
  // The small message at a fixed count of at least latency_iterations,
  // whatever the precision: stopped as soon as its mean is steady, it ran
  // 10-20 iterations, and one wait for a core in each made a healthy link's
  // fastest 35 us beside 6 us ones.
  RunConfig small = config;
  small.iterations.fixed_iters = std::max(small.iterations.fixed_iters, latency_iterations);
  const double part_s = halves == Halves::both ? share_s / 2 : share_s;
  for (const bool bandwidth : {true, false}) {
    if (halves == (bandwidth ? Halves::latency : Halves::bandwidth)) continue;
    const std::size_t bytes = bandwidth ? config.pairs.bytes : config.pairs.small_bytes;
    const Counts full = counts_for(Op::sendrecv, fabric_dtype, bytes, 2);
    Measurement m;
    const Window exchange;
    PairMessage message{full};
    if (bandwidth)
      message = message_within(sub.get(), group, world, sub ? size_key.key : -1, size_key.keys, full, part_s, exchange);
    if (sub && !message.probe_only) {
      m = measure_fabric_op(bandwidth ? config : small, *sub, group, Op::sendrecv, message.counts,
                            part_s - exchange.elapsed_s());
    }
    // Where the measurement could not fit (or did not even start), the
    // probe's exchanges are the pair's figure: measured, with a smaller
    // message, rather than none.
    const bool from_probe = sub && message.probe_bytes > 0 && (message.probe_only || m.skipped);
    const double seconds = from_probe ? message.probe_s : bandwidth ? m.local_seconds : m.local_min_seconds;
    const std::size_t moved = from_probe ? message.probe_bytes : sub && !m.skipped ? message.counts.bytes : 0;
    std::array<std::int64_t, 2> mine{sub && group.rank() == 0 && (m.cut || m.skipped) && !from_probe ? 1 : 0,
                                     sub && group.rank() == 0 && moved > 0 && moved < full.bytes ? 1 : 0};
    // The ranks that sit out the round, or are done, wait asleep: spinning
    // in the collective, they would take the cores of those still measuring
    // where ranks share them.
    world.quiet_barrier();
    world.allreduce_max(std::span<std::int64_t>(mine));
    cuts.fewer += static_cast<int>(mine[0]);
    cuts.smaller += static_cast<int>(mine[1]);
    std::uint64_t wrong = sub && group.rank() == 0 ? m.timing.wrong.value_or(0) : 0;
    wrong += message.wrong;
    world.allreduce_sum(std::span<std::uint64_t>(&wrong, 1));
    wrong_total += wrong;
    // Bandwidth from the mean iteration; latency from the fastest, which
    // contention (ranks sharing cores, a busy neighbour) can only slow.
    const RoundFigures figures = gather_figures(world, seconds, moved);
    if (world.rank() == 0) record(bandwidth, full.bytes, figures);
  }
  return cuts;
}

// Rail l of the node pair a-b from every rank's figures: the exchange time
// of local rank l on each, and the bytes one direction moved (0: not
// measured).
struct RailFigure {
  double seconds = 0;
  std::size_t moved = 0;
};

RailFigure rail_figure(const Layout& layout, int a, int b, int l, const RoundFigures& figures) {
  const auto ra = static_cast<std::size_t>(rank_at(layout, a, l));
  const auto rb = static_cast<std::size_t>(rank_at(layout, b, l));
  return {exchange_seconds(figures.seconds[ra], figures.seconds[rb]), std::min(figures.bytes[ra], figures.bytes[rb])};
}

// The node pair a-b's figure from its rails': bandwidth (GB/s) the sum over
// rails of the bytes one direction moved over the rail's exchange time,
// latency (us) the rails' mean exchange time; 0 where a rail was not measured
// (cut by the budget, or measured on its own: not measured, not zero). Each
// measured rail's own figure goes into `rails` where given: a latency there
// the fastest of the rail's exchanges so far.
double pair_figure(const Layout& layout, int rpn, int a, int b, const RoundFigures& figures, bool bandwidth,
                   std::vector<PairMatrix>* rails) {
  double sum = 0;
  bool measured = true;
  for (int l = 0; l < rpn; ++l) {
    const RailFigure rail = rail_figure(layout, a, b, l, figures);
    const bool ran = rail.seconds > 0 && (!bandwidth || rail.moved > 0);
    measured = measured && ran;
    if (!ran) continue;
    const double value = bandwidth ? static_cast<double>(rail.moved) / rail.seconds / 1e9 : rail.seconds * 1e6;
    sum += bandwidth ? value : value / rpn;
    if (rails != nullptr) {
      PairMatrix& m = (*rails)[static_cast<std::size_t>(l)];
      if (bandwidth)
        m.bw(a, b) = std::max(m.bw(a, b).value_or(value), value);
      else
        m.lat(a, b) = std::min(m.lat(a, b).value_or(value), value);
    }
  }
  return measured ? sum : 0;
}

double pair_gbs(const Layout& layout, int rpn, int a, int b, const RoundFigures& figures) {
  return pair_figure(layout, rpn, a, b, figures, true, nullptr);
}

// The smallest message any rail of the pair a-b moved, where it is below
// `full` (the budget made it smaller).
std::optional<std::size_t> smaller_message(const Layout& layout, int rpn, int a, int b, const RoundFigures& figures,
                                           std::size_t full) {
  std::size_t least = full;
  for (int l = 0; l < rpn; ++l)
    for (const int node : {a, b})
      least = std::min(least, figures.bytes[static_cast<std::size_t>(rank_at(layout, node, l))]);
  return least < full ? std::optional<std::size_t>(least) : std::nullopt;
}

// Whether a pass over node pairs keeps each rail's matrix: with several
// ranks a node, up to 724 nodes of 8 rails (beyond, the nodes' matrix
// alone). The same on every rank.
bool keeps_rails(int nodes, int rpn) {
  const auto cells = static_cast<std::size_t>(nodes) * static_cast<std::size_t>(nodes) * static_cast<std::size_t>(rpn);
  return rpn > 1 && cells <= max_matrix_cells;
}

// One round of node pairs (`pairing`: each node's partner, -1 idle), every
// rail at once, or only `rail`'s ranks where it is one; the pairs' figures
// into `pairs` on world rank 0: the node pair's bandwidth is the sum over
// rails of the bytes one direction moved over the rail's exchange time, its
// latency the rails' mean (the fastest so far); each rail's own figures into
// its matrix where there are several. Returns what the budget cut.
RoundCuts node_round(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
                     const std::vector<int>& pairing, NodePairs& pairs, std::uint64_t& wrong, double share_s,
                     Halves halves = Halves::both, int rail = -1) {
  const int n = layout.nodes;
  const int rpn = uniform_ranks_per_node(layout);
  const int partner = pairing[static_cast<std::size_t>(layout.node)];
  const bool in = partner >= 0 && (rail < 0 || layout.local_rank == rail);
  const int color = !in ? -1 : layout.local_rank * n + std::min(layout.node, partner);
  const int key = partner < 0 ? 0 : (layout.node < partner ? 0 : 1);
  if (world.rank() == 0 && pairs.rails.empty() && keeps_rails(n, rpn))
    pairs.rails.assign(static_cast<std::size_t>(rpn), PairMatrix(n));
  const bool by_rail = !pairs.rails.empty();
  return exchange_round(
      config, transport, world, color, key,
      [&](bool bandwidth, std::size_t full, const RoundFigures& figures) {
        for (int a = 0; a < n; ++a) {
          const int b = pairing[static_cast<std::size_t>(a)];
          if (b < 0) continue;
          const double value = pair_figure(layout, rpn, a, b, figures, bandwidth, by_rail ? &pairs.rails : nullptr);
          if (!(value > 0)) continue;
          if (!bandwidth) {
            pairs.nodes.lat(a, b) = std::min(pairs.nodes.lat(a, b).value_or(value), value);
            continue;
          }
          if (pairs.nodes.bw(a, b).value_or(0.0) >= value) continue;  // measured faster before in the pass
          pairs.nodes.bw(a, b) = value;
          pairs.nodes.smaller(a, b) = smaller_message(layout, rpn, a, b, figures, full);
        }
      },
      wrong, share_s, halves, SizeKey{!in ? -1 : std::min(layout.node, partner), n});
}

// Each node pair's latency, where every rail of it was measured: the mean
// of its rails' fastest.
void latency_from_rails(NodePairs& pairs) {
  if (pairs.rails.empty()) return;
  const int n = pairs.nodes.size;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      double sum = 0;
      bool all = true;
      for (const PairMatrix& rail : pairs.rails) {
        all = all && rail.lat(a, b).has_value();
        sum += rail.lat(a, b).value_or(0.0);
      }
      if (all) pairs.nodes.lat(a, b) = sum / static_cast<double>(pairs.rails.size());
    }
}

}  // namespace

double next_share(const Comm& world, const Window& phase, int left, double last_step_s, double least_s) {
  double share = unlimited_seconds;
  if (world.rank() == 0 && std::isfinite(phase.seconds())) {
    share = std::max(0.0, phase.left_s()) / std::max(left, 1);
    if (share <= 0 || last_step_s > share || least_s > share) share = -1;
  }
  return world.broadcast_value(share, 0);
}

double expected_check_s(const PhaseLimit& limit, Op op, std::size_t bytes) {
  const auto it = limit.check_s_per_byte.find(op);
  return it == limit.check_s_per_byte.end() ? 0.0 : it->second * static_cast<double>(bytes);
}

double expected_step_s(const PhaseLimit& limit, const Window& phase, const Comm& world, Transport* sub,
                       const OpSpec& spec) {
  constexpr std::size_t least = 4096;
  const std::size_t bytes = spec.counts.bytes;
  const std::size_t probe_bytes = std::max(bytes / 64, least);
  std::int32_t probe = world.rank() == 0 && std::isfinite(phase.seconds()) && probe_bytes < bytes ? 1 : 0;
  probe = world.broadcast_value(probe, 0);
  double t = 0;
  if (probe != 0 && sub != nullptr) {
    OpSpec small = spec;
    small.counts = counts_for(spec.op, spec.dtype, probe_bytes, sub->size());
    if (small.counts.param > 0 && small.counts.bytes > 0) {
      sub->prepare(small);
      sub->barrier();
      // An estimate only: the step checks its own output. The step runs its
      // check on buffers just made (the first run's rate) and at least a
      // warm-up and a timed iteration (the second's, a checked run being
      // no faster than the op alone).
      const CheckedRuns runs = checked_runs(*sub, small, nullptr);
      t = (runs.cold_s + 2 * runs.warm_s) * static_cast<double>(bytes) / static_cast<double>(small.counts.bytes);
    }
  }
  if (probe != 0) world.allreduce_max(std::span<double>(&t, 1));
  return std::max(t, expected_check_s(limit, spec.op, bytes));
}

std::size_t ladder_bytes(const ScaleConfig& config) {
  std::size_t cap = 4;
  while (cap * 2 <= config.mem_cap / 2) cap *= 2;
  return std::min(config.bytes, cap);
}

ScaleResult run_ladder(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
                       const PhaseLimit& limit) {
  const Window phase(limit.seconds);
  const int rpn = uniform_ranks_per_node(layout);
  ScaleResult result;
  result.bytes = ladder_bytes(config.scale);
  result.ranks_per_node = rpn;
  result.nic_gbit_per_node = config.scale.nic_gbit_per_node;
  const std::vector<LadderJob> jobs = ladder_jobs(config.scale, result.bytes);
  const std::vector<LevelPlan> plans = plan_ladder(layout.nodes);
  int steps_left = static_cast<int>(plans.size() * jobs.size());
  double last_step_s = 0;

  for (const LevelPlan& plan : plans) {
    const int color =
        plan.kind == LevelKind::rail ? layout.local_rank : plan.group_of_node[static_cast<std::size_t>(layout.node)];
    const Comm group = world.split(color, world.rank());
    const std::unique_ptr<Transport> sub = transport.split(group, color, world.rank());
    for (const LadderJob& job : jobs) {
      const Window step;
      const Counts counts = counts_for(job.op, fabric_dtype, job.bytes, group.empty() ? 1 : group.size());
      const OpSpec spec{job.op, fabric_dtype, RedOp::sum, Placement::out_of_place, 0, counts};
      const double least_s = expected_step_s(limit, phase, world, counts.param > 0 ? sub.get() : nullptr, spec);
      const double share = next_share(world, phase, steps_left--, last_step_s, least_s);
      const std::string what = plan.kind == LevelKind::rail
                                   ? fmt::format("{} {} rails", name(job.op), format_size(job.bytes))
                                   : fmt::format("{} {} groups of {} node{}", name(job.op), format_size(job.bytes),
                                                 plan.nodes_per_group, plan.nodes_per_group == 1 ? "" : "s");
      if (share < 0) {
        if (world.rank() == 0 && limit.cuts != nullptr) limit.cuts->push_back(Cut{Phase::ladder, what, "skipped"});
        continue;
      }
      GroupLine mine;
      if (sub && counts.param > 0) {
        const Measurement m = measure_fabric_op(config, *sub, group, job.op, counts, share);
        if (group.rank() == 0 && !m.skipped)
          mine = GroupLine{true,         color,        m.timing.time_us, m.timing.busbw_gbs, m.timing.wrong.value_or(0),
                           group.size(), m.cut ? 1 : 0};
      }
      const std::vector<GroupLine> lines = gather_group_lines(world, mine);
      last_step_s = step.elapsed_s();
      if (world.rank() != 0) continue;
      if (limit.cuts != nullptr) {
        const bool fewer = std::any_of(lines.begin(), lines.end(), [](const GroupLine& l) { return l.cut != 0; });
        if (lines.empty() && counts.param > 0)
          limit.cuts->push_back(Cut{Phase::ladder, what, "skipped"});
        else if (fewer)
          limit.cuts->push_back(Cut{Phase::ladder, what, "fewer iterations"});
      }
      if (lines.empty()) continue;
      LevelResult level;
      level.kind = plan.kind;
      level.op = job.op;
      level.bytes = counts.bytes;
      level.nodes_per_group = plan.nodes_per_group;
      level.ranks_per_group = plan.kind == LevelKind::rail ? layout.nodes : plan.nodes_per_group * rpn;
      for (const GroupLine& line : lines) {
        GroupResult g;
        g.group = line.color;
        for (int n = 0; n < layout.nodes; ++n) {
          if (plan.kind == LevelKind::rail || plan.group_of_node[static_cast<std::size_t>(n)] == line.color) {
            g.nodes.push_back(n);
            g.hosts.push_back(layout.hostnames[static_cast<std::size_t>(n)]);
          }
        }
        g.ranks = line.ranks;
        g.time_us = line.time_us;
        g.busbw_gbs = line.busbw_gbs;
        g.wrong = line.wrong;
        level.groups.push_back(g);
      }
      std::sort(level.groups.begin(), level.groups.end(),
                [](const GroupResult& a, const GroupResult& b) { return a.group < b.group; });
      result.levels.push_back(level);
    }
  }
  // What the projection is made of; analysis judges the levels and projects.
  if (world.rank() == 0 && config.scale.grad_bytes > 0)
    result.projection_input = projection_input(config.scale, fabric_dtype);
  return result;
}

void plan_pairs(const PairConfig& config, int nodes, PairsResult& result) {
  if (config.sample <= 0 && nodes > config.full_limit) {
    result.mode = "random";
    result.seed = config.seed;
    result.rounds.clear();
    for (int r = 0; r < random_pair_cost(nodes, config.peers).rounds; ++r) result.rounds.push_back(r);
  } else {
    result.mode = "full";
    result.seed = 0;
    result.rounds = pair_rounds(nodes, config.sample);
  }
  result.rounds_planned = static_cast<int>(result.rounds.size());
}

PairsResult run_pairs(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
                      const PhaseLimit& limit, const PairPass& pass) {
  const Window phase(limit.seconds);
  const int rpn = uniform_ranks_per_node(layout);
  const int n = layout.nodes;
  PairsResult result;
  result.bytes = config.pairs.bytes;
  result.small_bytes = config.pairs.small_bytes;
  result.ranks_per_node = rpn;
  result.hosts = layout.hostnames;
  NodePairs between{PairMatrix(n), {}};
  plan_pairs(config.pairs, n, result);
  const std::vector<int> order = seat_order(n, result.seed);
  const std::vector<int> planned = result.rounds;
  result.rounds.clear();
  result.intra.assign(static_cast<std::size_t>(n), PairMatrix(pass.intra ? rpn : 0));
  const int intra_rounds = pass.intra ? pair_round_count(rpn) : 0;
  // The steps kept for what follows the rounds count as rounds: each round
  // gets its part, and what is left after the last one is theirs.
  int steps_left = static_cast<int>(planned.size()) + intra_rounds + pass.reserve_steps;
  // Every round fits itself to its share (its counts, and a slow link's
  // message, down to its probe's figure), so a round that ran a little over
  // its share never costs the next one its turn: every planned pair is
  // measured, in the health pass too, whose figures name a slow host.
  const auto cut = [&](const std::string& what, const RoundCuts& cuts, bool skipped) {
    if (world.rank() != 0 || limit.cuts == nullptr) return;
    if (skipped || cuts.fewer > 0)
      limit.cuts->push_back(Cut{pass.phase, what, skipped ? "skipped" : "fewer iterations"});
  };
  // The links of a round whose bandwidth the budget measured with a
  // smaller message, listed with it.
  const auto smaller = [&](const std::string& what, const PairMatrix& matrix, const std::vector<int>& pairing,
                           const std::vector<std::string>& names) {
    if (world.rank() != 0 || limit.cuts == nullptr) return;
    std::vector<std::string> links;
    for (std::size_t a = 0; a < pairing.size(); ++a) {
      const int b = pairing[a];
      if (b <= static_cast<int>(a)) continue;  // each pair once (the other end's entry, or idle)
      if (const auto& bytes = matrix.smaller(static_cast<int>(a), b))
        links.push_back(fmt::format("{}-{} at {} of {}", names[a], names[static_cast<std::size_t>(b)],
                                    format_size(*bytes), format_size(result.bytes)));
    }
    if (!links.empty())
      limit.cuts->push_back(Cut{pass.phase, fmt::format("{}: {}", what, fmt::join(links, ", ")), "smaller messages"});
  };

  // Between nodes: every rail at once.
  for (const int round : planned) {
    const double share = next_share(world, phase, steps_left--, 0.0);
    const std::string what = fmt::format("node pairs round {}", round);
    if (share < 0) {
      cut(what, {}, true);
      continue;
    }
    const std::vector<int> pairing = partners(n, round, order);
    const RoundCuts cuts = node_round(config, transport, world, layout, pairing, between, result.wrong, share);
    result.rounds.push_back(round);
    cut(what, cuts, false);
    if (cuts.smaller > 0) smaller(what, between.nodes, pairing, layout.hostnames);
  }
  // Each round's small message once more after every round has run, each
  // rail on its own where the rails are kept; a rail's latency is the
  // fastest of its two, the node pair's the mean of its rails'. Where ranks
  // share cores a pair can wait for one through a whole burst, and the
  // scheduler's placement can last the round: a healthy rail measured
  // 72.9 us beside 6.7 us ones with every rail at once, then 7.7 us seconds
  // later, a suspect that only the second pass cleared. A wait for a core
  // slows one burst; a slow link slows both. The bursts take their part of
  // what the rounds left, with the steps still to come; where none is left
  // the rounds' own figure stands (no figure is missing, so no cut).
  const int rails = keeps_rails(n, rpn) ? rpn : 1;
  int bursts_left = static_cast<int>(result.rounds.size()) * rails;
  for (const int round : result.rounds) {
    const std::vector<int> pairing = partners(n, round, order);
    for (int l = 0; l < rails; ++l) {
      const double share = next_share(world, phase, steps_left + bursts_left--, 0.0);
      if (share < 0) continue;
      (void)node_round(config, transport, world, layout, pairing, between, result.wrong, share, Halves::latency,
                       rails > 1 ? l : -1);
    }
  }
  latency_from_rails(between);
  result.nodes = std::move(between.nodes);
  result.rails = std::move(between.rails);

  // Within each node: local rank pairs, every node at once.
  for (int round = 0; round < intra_rounds; ++round) {
    const double share = next_share(world, phase, steps_left--, 0.0);
    const std::string what = fmt::format("local rank pairs round {}", round);
    if (share < 0) {
      cut(what, {}, true);
      continue;
    }
    const std::vector<int> pairing = partners(rpn, round);
    const int partner = pairing[static_cast<std::size_t>(layout.local_rank)];
    const int color = partner < 0 ? -1 : layout.node * rpn + std::min(layout.local_rank, partner);
    const int key = partner < 0 ? 0 : (layout.local_rank < partner ? 0 : 1);
    const RoundCuts cuts = exchange_round(
        config, transport, world, color, key,
        [&](bool bandwidth, std::size_t full, const RoundFigures& figures) {
          for (int node = 0; node < n; ++node) {
            PairMatrix& matrix = result.intra[static_cast<std::size_t>(node)];
            for (int a = 0; a < rpn; ++a) {
              const int b = pairing[static_cast<std::size_t>(a)];
              if (b < 0) continue;
              const auto ra = static_cast<std::size_t>(rank_at(layout, node, a));
              const auto rb = static_cast<std::size_t>(rank_at(layout, node, b));
              const double t = exchange_seconds(figures.seconds[ra], figures.seconds[rb]);
              const std::size_t moved = std::min(figures.bytes[ra], figures.bytes[rb]);
              if (!(t > 0)) continue;
              if (!bandwidth) {
                matrix.lat(a, b) = t * 1e6;
              } else if (moved > 0) {
                matrix.bw(a, b) = static_cast<double>(moved) / t / 1e9;
                if (moved < full) matrix.smaller(a, b) = moved;
              }
            }
          }
        },
        result.wrong, share, Halves::both, SizeKey{color, n * rpn});
    cut(what, cuts, false);
    if (cuts.smaller > 0)
      for (int node = 0; node < n; ++node) {
        std::vector<std::string> names;
        for (int l = 0; l < rpn; ++l)
          names.push_back(fmt::format("{} rank {}", layout.hostnames[static_cast<std::size_t>(node)], l));
        smaller(what, result.intra[static_cast<std::size_t>(node)], pairing, names);
      }
  }
  return result;
}

NodePairs run_pair_checks(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
                          const std::vector<PairRound>& rounds, std::uint64_t& wrong, double seconds,
                          int latency_bursts, int bandwidth_bursts) {
  NodePairs matrix{PairMatrix(layout.nodes), {}};
  const Window checks(seconds);
  const bool finite = std::isfinite(seconds);
  // The small message's bursts beyond the rounds' own, each rail on its own
  // where the rails are kept (so that where ranks share cores a rail's pair
  // does not wait on the other rails' polling), half before the rounds and
  // half after, so that they spread over the pass; a fifth of the pass is
  // held for them.
  const int extra = std::max(latency_bursts, 1) - 1;
  const int before = extra / 2;
  const int rpn = uniform_ranks_per_node(layout);
  const int rails = keeps_rails(layout.nodes, rpn) ? rpn : 1;
  // The rail a round runs on (-1: every rail at once); rails are only told
  // apart where they are kept.
  const auto rail_of = [rails](const PairRound& round) { return rails > 1 ? round.rail : -1; };
  // The rails a round's bursts run on, each on its own.
  const auto burst_rails = [&](const PairRound& round) {
    if (rail_of(round) >= 0) return std::vector<int>{round.rail};
    if (rails == 1) return std::vector<int>{-1};
    std::vector<int> all(static_cast<std::size_t>(rails));
    std::iota(all.begin(), all.end(), 0);
    return all;
  };
  const double held_s = finite && extra > 0 ? seconds / 5 : 0.0;
  const double before_s = held_s * before / std::max(extra, 1);
  const auto bursts = [&](int count, double within_s) {
    const Window window(within_s);
    int left = 0;
    for (const PairRound& round : rounds) left += count * static_cast<int>(burst_rails(round).size());
    for (int k = 0; k < count; ++k)
      for (const PairRound& round : rounds)
        for (const int l : burst_rails(round)) {
          const double share = next_share(world, window, left--, 0);
          if (share < 0) return;
          (void)node_round(config, transport, world, layout, round.partners, matrix, wrong, share, Halves::latency, l);
        }
  };
  bursts(before, finite ? before_s : seconds);
  const double after_s = held_s - before_s;
  // The rounds `bandwidth_bursts` times over, the later times the large
  // message only.
  const Window full(finite ? checks.left_s() - after_s : seconds);
  const int times = std::max(bandwidth_bursts, 1);
  int left = static_cast<int>(rounds.size()) * times;
  for (int k = 0; k < times && left > 0; ++k)
    for (const PairRound& round : rounds) {
      const double share = next_share(world, full, left--, 0);
      if (share < 0) {
        left = 0;
        break;
      }
      (void)node_round(config, transport, world, layout, round.partners, matrix, wrong, share,
                       k == 0 ? Halves::both : Halves::bandwidth, rail_of(round));
    }
  bursts(extra - before, finite ? checks.left_s() : seconds);
  latency_from_rails(matrix);
  return matrix;
}

std::vector<PairRound> broadcast_rounds(const Comm& world, const std::vector<PairRound>& rounds, int nodes) {
  // Each round as its partners, then its rail.
  std::vector<int> ints;
  if (world.rank() == 0)
    for (const PairRound& round : rounds) {
      ints.insert(ints.end(), round.partners.begin(), round.partners.end());
      ints.push_back(round.rail);
    }
  std::string bytes(reinterpret_cast<const char*>(ints.data()), ints.size() * sizeof(int));
  bytes = world.broadcast_bytes(std::move(bytes), 0);
  const std::size_t per_round = (static_cast<std::size_t>(nodes) + 1) * sizeof(int);
  std::vector<PairRound> out;
  for (std::size_t at = 0; nodes > 0 && at + per_round <= bytes.size(); at += per_round) {
    std::vector<int> round(static_cast<std::size_t>(nodes) + 1);
    std::memcpy(round.data(), bytes.data() + at, per_round);
    const int rail = round.back();
    round.pop_back();
    out.push_back(PairRound{std::move(round), rail});
  }
  return out;
}

BisectionResult run_bisection(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
                              const std::vector<int>& island_of) {
  const int rpn = uniform_ranks_per_node(layout);
  const int n = layout.nodes;
  BisectionResult result;
  result.bytes = counts_for(Op::sendrecv, fabric_dtype, config.pairs.bytes, 2).bytes;
  result.seed = config.placement.bisection_seed;
  result.ranks_per_node = rpn;
  result.nodes = n;
  for (const Halving& halving : plan_bisection(n, config.placement.bisection_halvings, result.seed, island_of)) {
    HalvingResult h;
    h.half_a = halving.half_a;
    h.half_b = halving.half_b;
    h.source = halving.source;
    // The pair index of each node in this halving (-1: sits out).
    std::vector<int> pair_of(static_cast<std::size_t>(n), -1);
    for (std::size_t p = 0; p < halving.half_a.size(); ++p) {
      pair_of[static_cast<std::size_t>(halving.half_a[p])] = static_cast<int>(p);
      pair_of[static_cast<std::size_t>(halving.half_b[p])] = static_cast<int>(p);
      BisectionPair pair;
      pair.a = halving.half_a[p];
      pair.b = halving.half_b[p];
      pair.host_a = layout.hostnames[static_cast<std::size_t>(pair.a)];
      pair.host_b = layout.hostnames[static_cast<std::size_t>(pair.b)];
      h.pairs.push_back(pair);
    }
    const int mine = pair_of[static_cast<std::size_t>(layout.node)];
    const bool first = mine >= 0 && halving.half_a[static_cast<std::size_t>(mine)] == layout.node;
    const int key = first ? 0 : 1;
    // Every pair at once: each rank with its counterpart on the partner node.
    exchange_round(
        config, transport, world, mine < 0 ? -1 : layout.local_rank * n + mine, key,
        [&](bool, std::size_t, const RoundFigures& figures) {
          for (BisectionPair& p : h.pairs) p.loaded_gbs = pair_gbs(layout, rpn, p.a, p.b, figures);
        },
        result.wrong, unlimited_seconds, Halves::bandwidth);
    // Then the first pairs alone, one after the other.
    const int alone = std::min<int>(static_cast<int>(h.pairs.size()), bisection_alone_pairs);
    for (int p = 0; p < alone; ++p) {
      exchange_round(
          config, transport, world, mine == p ? layout.local_rank : -1, key,
          [&](bool, std::size_t, const RoundFigures& figures) {
            BisectionPair& pair = h.pairs[static_cast<std::size_t>(p)];
            pair.isolated_gbs = pair_gbs(layout, rpn, pair.a, pair.b, figures);
          },
          result.wrong, unlimited_seconds, Halves::bandwidth);
    }
    result.halvings.push_back(std::move(h));
  }
  return result;
}

}  // namespace fabricbench
