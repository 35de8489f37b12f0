#include "fabricbench/engine/multinode.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

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

// Every rank's own time per iteration, on every rank.
std::vector<double> gather_times(const Comm& world, double mine) {
  std::vector<double> times(static_cast<std::size_t>(world.size()), 0.0);
  times[static_cast<std::size_t>(world.rank())] = mine;
  world.allreduce_sum(times);
  return times;
}

// The ladder and the pair rounds measure float sums out of place.
Measurement measure_fabric_op(const RunConfig& config, Transport& transport, const Comm& group, Op op,
                              const Counts& counts, double share_s) {
  const OpSpec spec{op, fabric_dtype, RedOp::sum, Placement::out_of_place, 0, counts};
  transport.prepare(spec);
  return measure_op(config, transport, group, spec, share_s);
}

// World rank 0's share for the next of `left` steps of a phase, broadcast;
// -1 when nothing is left (or the last step took longer than the share).
double next_share(const Comm& world, const Window& phase, int left, double last_step_s) {
  double share = unlimited_seconds;
  if (world.rank() == 0 && std::isfinite(phase.seconds())) {
    share = std::max(0.0, phase.left_s()) / std::max(left, 1);
    if (share <= 0 || last_step_s > share) share = -1;
  }
  return world.broadcast_value(share, 0);
}

// One round of pair exchanges: the members with equal color (two ranks) run
// the send/recv op at the large and the small size; every rank's own time is
// gathered and handed, on world rank 0, to `record` with the bytes one
// direction moved.
// Returns how many of this round's measurements the budget cut (on every
// rank).
template <typename Record>
int exchange_round(const RunConfig& config, Transport& transport, const Comm& world, int color, int key,
                   const Record& record, std::uint64_t& wrong_total, double share_s, bool latency_too = true) {
  const Comm group = world.split(color, key);
  const std::unique_ptr<Transport> sub = transport.split(group, color, key);
  int cut = 0;
  RunConfig small = config;
  if (small.iterations.fixed_iters > 0)
    small.iterations.fixed_iters = std::max(small.iterations.fixed_iters, latency_iterations);
  for (const bool bandwidth : {true, false}) {
    if (!bandwidth && !latency_too) continue;
    const std::size_t bytes = bandwidth ? config.pairs.bytes : config.pairs.small_bytes;
    const Counts counts = counts_for(Op::sendrecv, fabric_dtype, bytes, 2);
    Measurement m;
    if (sub) m = measure_fabric_op(bandwidth ? config : small, *sub, group, Op::sendrecv, counts, share_s / 2);
    std::int64_t mine_cut = sub && group.rank() == 0 && (m.cut || m.skipped) ? 1 : 0;
    world.allreduce_max(std::span<std::int64_t>(&mine_cut, 1));
    cut += static_cast<int>(mine_cut);
    std::uint64_t wrong = sub && group.rank() == 0 ? m.timing.wrong.value_or(0) : 0;
    world.allreduce_sum(std::span<std::uint64_t>(&wrong, 1));
    wrong_total += wrong;
    // Bandwidth from the mean iteration; latency from the fastest, which
    // contention (ranks sharing cores, a busy neighbour) can only slow.
    const std::vector<double> times = gather_times(world, bandwidth ? m.local_seconds : m.local_min_seconds);
    if (world.rank() == 0) record(bandwidth, counts.bytes, times);
  }
  return cut;
}

// One round of node pairs (`pairing`: each node's partner, -1 idle), every
// rail at once; the pairs' figures into `matrix` on world rank 0. Returns
// how many measurements the budget cut.
int node_round(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
               const std::vector<int>& pairing, PairMatrix& matrix, std::uint64_t& wrong, double share_s) {
  const int n = layout.nodes;
  const int rpn = uniform_ranks_per_node(layout);
  const int partner = pairing[static_cast<std::size_t>(layout.node)];
  const int color = partner < 0 ? -1 : layout.local_rank * n + std::min(layout.node, partner);
  const int key = partner < 0 ? 0 : (layout.node < partner ? 0 : 1);
  return exchange_round(
      config, transport, world, color, key,
      [&](bool bandwidth, std::size_t moved, const std::vector<double>& times) {
        for (int a = 0; a < n; ++a) {
          const int b = pairing[static_cast<std::size_t>(a)];
          if (b < 0) continue;
          double gbs = 0;
          double us = 0;
          bool measured = true;
          for (int l = 0; l < rpn; ++l) {
            const double t = exchange_seconds(times[static_cast<std::size_t>(rank_at(layout, a, l))],
                                              times[static_cast<std::size_t>(rank_at(layout, b, l))]);
            measured = measured && t > 0;
            gbs += t > 0 ? static_cast<double>(moved) / t / 1e9 : 0.0;
            us += t * 1e6 / rpn;
          }
          if (!measured) continue;  // cut by the budget: not measured, not zero
          if (bandwidth)
            matrix.bw(a, b) = gbs;
          else
            matrix.lat(a, b) = us;
        }
      },
      wrong, share_s);
}

// A node pair's bandwidth from every rank's time: the sum over rails of the
// bytes one direction moved over the pair's exchange time.
double pair_gbs(const Layout& layout, int rpn, int a, int b, std::size_t moved, const std::vector<double>& times) {
  double gbs = 0;
  for (int l = 0; l < rpn; ++l) {
    const double t = exchange_seconds(times[static_cast<std::size_t>(rank_at(layout, a, l))],
                                      times[static_cast<std::size_t>(rank_at(layout, b, l))]);
    gbs += t > 0 ? static_cast<double>(moved) / t / 1e9 : 0.0;
  }
  return gbs;
}

}  // namespace

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
      const double share = next_share(world, phase, steps_left--, last_step_s);
      const std::string what = plan.kind == LevelKind::rail
                                   ? fmt::format("{} {} rails", name(job.op), format_size(job.bytes))
                                   : fmt::format("{} {} groups of {} node{}", name(job.op), format_size(job.bytes),
                                                 plan.nodes_per_group, plan.nodes_per_group == 1 ? "" : "s");
      if (share < 0) {
        if (world.rank() == 0 && limit.cuts != nullptr) limit.cuts->push_back(Cut{Phase::ladder, what, "skipped"});
        continue;
      }
      GroupLine mine;
      const Counts counts = counts_for(job.op, fabric_dtype, job.bytes, group.empty() ? 1 : group.size());
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
  result.nodes = PairMatrix(n);
  plan_pairs(config.pairs, n, result);
  const std::vector<int> order = seat_order(n, result.seed);
  const std::vector<int> planned = result.rounds;
  result.rounds.clear();
  result.intra.assign(static_cast<std::size_t>(n), PairMatrix(pass.intra ? rpn : 0));
  const int intra_rounds = pass.intra ? pair_round_count(rpn) : 0;
  int steps_left = static_cast<int>(planned.size()) + intra_rounds;
  double last_step_s = 0;
  const auto cut = [&](std::string what, int measurements_cut, bool skipped) {
    if (world.rank() != 0 || limit.cuts == nullptr) return;
    if (skipped || measurements_cut > 0)
      limit.cuts->push_back(Cut{pass.phase, std::move(what), skipped ? "skipped" : "fewer iterations"});
  };

  // Between nodes: every rail at once.
  for (const int round : planned) {
    const Window step;
    // The health pass is a few rounds of fixed, short counts: a round runs
    // while any of the pass's time is left, and its measurements are never
    // cut short, so that a slow host's links are measured: they are what
    // names it.
    const double share = next_share(world, phase, pass.phase == Phase::health ? 1 : steps_left, last_step_s);
    --steps_left;
    if (share < 0) {
      cut(fmt::format("node pairs round {}", round), 0, true);
      continue;
    }
    const std::vector<int> pairing = partners(n, round, order);
    const int cuts = node_round(config, transport, world, layout, pairing, result.nodes, result.wrong,
                                pass.phase == Phase::health ? unlimited_seconds : share);
    result.rounds.push_back(round);
    cut(fmt::format("node pairs round {}", round), cuts, false);
    last_step_s = step.elapsed_s();
  }

  // Within each node: local rank pairs, every node at once.
  for (int round = 0; round < intra_rounds; ++round) {
    const Window step;
    const double share = next_share(world, phase, steps_left--, last_step_s);
    if (share < 0) {
      cut(fmt::format("local rank pairs round {}", round), 0, true);
      continue;
    }
    const int partner = partners(rpn, round)[static_cast<std::size_t>(layout.local_rank)];
    const int color = partner < 0 ? -1 : layout.node * rpn + std::min(layout.local_rank, partner);
    const int key = partner < 0 ? 0 : (layout.local_rank < partner ? 0 : 1);
    const int cuts = exchange_round(
        config, transport, world, color, key,
        [&](bool bandwidth, std::size_t moved, const std::vector<double>& times) {
          const std::vector<int> pairing = partners(rpn, round);
          for (int node = 0; node < n; ++node) {
            PairMatrix& matrix = result.intra[static_cast<std::size_t>(node)];
            for (int a = 0; a < rpn; ++a) {
              const int b = pairing[static_cast<std::size_t>(a)];
              if (b < 0) continue;
              const double t = exchange_seconds(times[static_cast<std::size_t>(rank_at(layout, node, a))],
                                                times[static_cast<std::size_t>(rank_at(layout, node, b))]);
              if (!(t > 0)) continue;
              if (bandwidth)
                matrix.bw(a, b) = static_cast<double>(moved) / t / 1e9;
              else
                matrix.lat(a, b) = t * 1e6;
            }
          }
        },
        result.wrong, share);
    cut(fmt::format("local rank pairs round {}", round), cuts, false);
    last_step_s = step.elapsed_s();
  }
  return result;
}

PairMatrix run_pair_checks(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
                           const std::vector<std::vector<int>>& rounds, std::uint64_t& wrong) {
  RunConfig quick = config;
  quick.iterations.warmup = 1;
  quick.iterations.fixed_iters = 3;
  PairMatrix matrix(layout.nodes);
  for (const std::vector<int>& pairing : rounds)
    (void)node_round(quick, transport, world, layout, pairing, matrix, wrong, unlimited_seconds);
  return matrix;
}

std::vector<std::vector<int>> broadcast_rounds(const Comm& world, const std::vector<std::vector<int>>& rounds,
                                               int nodes) {
  std::string bytes;
  if (world.rank() == 0)
    for (const std::vector<int>& round : rounds)
      bytes.append(reinterpret_cast<const char*>(round.data()), round.size() * sizeof(int));
  bytes = world.broadcast_bytes(std::move(bytes), 0);
  const std::size_t per_round = static_cast<std::size_t>(nodes) * sizeof(int);
  std::vector<std::vector<int>> out;
  for (std::size_t at = 0; per_round > 0 && at + per_round <= bytes.size(); at += per_round) {
    std::vector<int> round(static_cast<std::size_t>(nodes));
    std::memcpy(round.data(), bytes.data() + at, per_round);
    out.push_back(std::move(round));
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
        [&](bool, std::size_t moved, const std::vector<double>& times) {
          for (BisectionPair& p : h.pairs) p.loaded_gbs = pair_gbs(layout, rpn, p.a, p.b, moved, times);
        },
        result.wrong, unlimited_seconds, false);
    // Then the first pairs alone, one after the other.
    const int alone = std::min<int>(static_cast<int>(h.pairs.size()), bisection_alone_pairs);
    for (int p = 0; p < alone; ++p) {
      exchange_round(
          config, transport, world, mine == p ? layout.local_rank : -1, key,
          [&](bool, std::size_t moved, const std::vector<double>& times) {
            BisectionPair& pair = h.pairs[static_cast<std::size_t>(p)];
            pair.isolated_gbs = pair_gbs(layout, rpn, pair.a, pair.b, moved, times);
          },
          result.wrong, unlimited_seconds, false);
    }
    result.halvings.push_back(std::move(h));
  }
  return result;
}

}  // namespace fabricbench
