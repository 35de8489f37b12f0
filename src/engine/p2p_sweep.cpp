#include "fabricbench/engine/p2p_sweep.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"
#include "fabricbench/engine/sweep.hpp"

namespace fabricbench {
namespace {

// What the pair's first rank sends to every rank after one test.
struct Figures {
  double seconds = 0;
  double iterations = 0;
};

// Times one test on the two ranks of `pair`: warm-up, an iteration count
// decided on the pair's first rank, a timed batch.
Figures time_test(const IterationPolicy& policy, Transport& pair_transport, const Comm& pair, const P2PSpec& spec) {
  const int warmup = std::max(policy.warmup, policy.fixed_iters > 0 ? 0 : 1);
  double per_iteration = 0;
  if (warmup > 0) {
    pair_transport.barrier();
    per_iteration = pair_transport.time_p2p(spec, warmup) / warmup;
    pair.allreduce_max(std::span<double>(&per_iteration, 1));
  }
  const int iters = pair.broadcast_value(choose_iterations(policy, per_iteration), 0);
  pair_transport.barrier();
  const double seconds = pair_transport.time_p2p(spec, iters);
  return {seconds, static_cast<double>(iters)};
}

}  // namespace

std::vector<int> p2p_sweep_ranks(const P2PSweepConfig& config, const Layout& layout) {
  std::vector<int> ranks;
  if (!config.ranks.empty()) {
    ranks = config.ranks;
    for (const int r : ranks)
      if (r < 0 || r >= layout.ranks)
        throw UsageError(
            fmt::format("--ranks {}: there are only {} ranks (0 to {})", r, layout.ranks, layout.ranks - 1));
    if (ranks.size() != 2 || ranks[0] == ranks[1])
      throw UsageError(fmt::format("--ranks: give two different ranks, e.g. 0,1"));
    return ranks;
  }
  if (!config.nodes.empty()) {
    for (const int n : config.nodes)
      if (n < 0 || n >= layout.nodes)
        throw UsageError(
            fmt::format("--nodes {}: there are only {} nodes (0 to {})", n, layout.nodes, layout.nodes - 1));
    if (config.nodes.size() != 2 || config.nodes[0] == config.nodes[1])
      throw UsageError("--nodes: give two different nodes, e.g. 0,1");
    for (const int n : config.nodes) ranks.push_back(rank_at(layout, n, 0));
    return ranks;
  }
  if (layout.ranks < 2) throw UsageError("p2p --sweep: needs 2 ranks or more (mpirun -np 2)");
  // Across nodes when there are several: rank 0 and the first rank elsewhere.
  for (int r = 1; r < layout.ranks; ++r)
    if (layout.node_of_rank[static_cast<std::size_t>(r)] != layout.node_of_rank[0]) return {0, r};
  return {0, 1};
}

P2PRecord make_p2p_record(P2PTest test, std::size_t bytes, int window, double seconds, int iters) {
  P2PRecord r;
  r.test = test;
  r.bytes = bytes;
  r.window = test == P2PTest::latency ? 1 : std::max(window, 1);
  r.iterations = iters;
  if (iters <= 0) return r;
  const double per_iteration = seconds / iters;
  r.time_us = per_iteration * 1e6;
  const double messages = test == P2PTest::latency ? 2.0 : static_cast<double>(r.window);
  r.latency_us = r.time_us / messages;
  const double moved = static_cast<double>(bytes) * (test == P2PTest::bibandwidth ? 2.0 * r.window : r.window);
  const double one_way_s = test == P2PTest::latency ? per_iteration / 2 : per_iteration;
  r.bandwidth_gbs = one_way_s > 0 ? moved / one_way_s / 1e9 : 0.0;
  return r;
}

P2PSweepResult run_p2p_sweep(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
                             const std::function<void(std::span<const P2PRecord>)>& on_size) {
  P2PSweepResult result;
  result.ranks = p2p_sweep_ranks(config.p2p_sweep, layout);
  result.window = std::max(config.p2p_sweep.window, 1);
  for (const int r : result.ranks)
    result.hosts.push_back(
        layout.hostnames[static_cast<std::size_t>(layout.node_of_rank[static_cast<std::size_t>(r)])]);

  const int me = world.rank();
  const bool member = me == result.ranks[0] || me == result.ranks[1];
  const int color = member ? 0 : -1;
  const int key = me == result.ranks[0] ? 0 : 1;
  const Comm pair = world.split(color, key);
  const std::unique_ptr<Transport> sub = transport.split(pair, color, key);
  const bool lead = me == 0;

  for (const std::size_t bytes : config.sizes) {
    // The check: one send/recv exchange of this size, verified on both ends.
    const OpSpec check{Op::sendrecv,
                       DType::uint8,
                       RedOp::sum,
                       Placement::out_of_place,
                       0,
                       counts_for(Op::sendrecv, DType::uint8, bytes, 2)};
    std::uint64_t wrong = 0;
    std::vector<double> figures(2 * config.p2p_sweep.tests.size(), 0.0);
    if (sub) {
      sub->prepare(check);
      if (config.check) {
        sub->fill(check);
        sub->barrier();
        sub->run_once(check);
        wrong = sub->verify(check);
      }
      for (std::size_t t = 0; t < config.p2p_sweep.tests.size(); ++t) {
        const P2PSpec spec{config.p2p_sweep.tests[t], bytes, result.window};
        const Figures f = time_test(config.iterations, *sub, pair, spec);
        if (pair.rank() == 0) {
          figures[2 * t] = f.seconds;
          figures[2 * t + 1] = f.iterations;
        }
      }
    }
    // Every rank meets here: the pair's first rank has the figures.
    world.allreduce_sum(std::span<double>(figures));
    world.allreduce_sum(std::span<std::uint64_t>(&wrong, 1));
    if (!lead) continue;
    std::vector<P2PRecord> done;
    for (std::size_t t = 0; t < config.p2p_sweep.tests.size(); ++t) {
      P2PRecord r = make_p2p_record(config.p2p_sweep.tests[t], bytes, result.window, figures[2 * t],
                                    static_cast<int>(figures[2 * t + 1]));
      if (config.check) r.wrong = wrong;
      done.push_back(r);
    }
    result.wrong += wrong;
    if (on_size) on_size(done);
    result.records.insert(result.records.end(), done.begin(), done.end());
  }
  return result;
}

}  // namespace fabricbench
