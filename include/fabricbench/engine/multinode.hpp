#pragma once
// Running the scaling ladder and the node-pair matrix over a transport:
// sub-groups are split from the world (Comm::split, then Transport::split,
// which is MPI_Comm_split or ncclCommSplit), and every group of a level or
// round runs at once.

#include <map>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/comm/layout.hpp"
#include "fabricbench/core/budget.hpp"
#include "fabricbench/core/config.hpp"
#include "fabricbench/engine/pairs.hpp"
#include "fabricbench/engine/placement.hpp"
#include "fabricbench/engine/scaling.hpp"
#include "fabricbench/transport/transport.hpp"

namespace fabricbench {

// The size the ladder runs: the configured size, capped so that a send and a
// receive buffer fit in mem_cap (rounded down to a power of two).
std::size_t ladder_bytes(const ScaleConfig& config);

// How long a phase may take (`seconds`, read on world rank 0, which shares
// it out and broadcasts every cut), and where rank 0 lists what it cut.
struct PhaseLimit {
  double seconds = unlimited_seconds;
  std::vector<Cut>* cuts = nullptr;
  // Rank 0's: seconds per byte of each op's check as the sweep measured it
  // (check_seconds_per_byte); a ladder step whose check alone, so scaled,
  // would outlast its share is skipped before it starts.
  std::map<Op, double> check_s_per_byte;
};

// What `limit` expects the check of `op` at `bytes` to take; 0 when unknown.
double expected_check_s(const PhaseLimit& limit, Op op, std::size_t bytes);

// What a ladder step (of `spec`, on `sub`, the step's group; null where
// this rank sits it out) is expected to take at least, on world rank 0,
// for next_share: the larger of the sweep's figure for its op's check
// (`limit`) and a probe's: two checked runs of a 64th of its message (4 KiB
// at least; fill, run, verify) on every group at once, the slowest rank's,
// scaled to the message: its check at the first's rate (on fresh buffers,
// as the step's check will be), a warm-up and a timed iteration at the
// second's. Without it a phase with no sweep before it (`scale`) started a
// 256 MiB step whose check alone outlasted its share threefold; the check
// alone at a warm probe's rate (4 MiB, held in a cache as 256 MiB is not)
// showed a fifth of what the step took, a 16th-size probe a third, at 4 to
// 12 s a probe on a slow link. Nothing runs where rank 0's `phase` has no
// budget or the message is no larger than its probe. Collective over
// `world`.
double expected_step_s(const PhaseLimit& limit, const Window& phase, const Comm& world, Transport* sub,
                       const OpSpec& spec);

// World rank 0's share for the next of `left` steps of `phase`, broadcast:
// an even part of what is left, or -1 when nothing is left, or the last
// step (`last_step_s`; steps grow, as a ladder's levels do) or what the
// step is expected to take at least (`least_s`) is longer than the share,
// so the step would only overrun it.
double next_share(const Comm& world, const Window& phase, int left, double last_step_s, double least_s = 0);

// A pass over node pairs: the full matrix (with the pairs of local ranks
// inside each node), or the quick health pass before the sweep (between
// nodes only, under its own phase name).
struct PairPass {
  bool intra = true;
  Phase phase = Phase::pairs;
  int reserve_steps = 0;  // rounds' worth of the phase kept for what follows (the second pass)
};

// The rounds the pair matrix runs for `nodes` nodes: all of the tournament
// (or `sample` of them), or above `full_limit` nodes `peers` rounds in a
// random order. Fills mode, seed, rounds_planned and rounds.
void plan_pairs(const PairConfig& config, int nodes, PairsResult& result);

// One measurement of a ladder's level: an op at a size.
struct LadderJob {
  Op op;
  std::size_t bytes;
};

// What each level of a ladder measures: `scale.ops` at `bytes` (with
// --scale-sweep and `with_sweep`, the smaller sizes before it), then the
// projection's ops at the gradient size; sizes rounded down to whole float
// elements, repeats and empty sizes left out.
std::vector<LadderJob> ladder_jobs(const ScaleConfig& scale, std::size_t bytes, bool with_sweep = true);

// Collective over `world`; the results are complete on world rank 0.
ScaleResult run_ladder(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
                       const PhaseLimit& limit = {});
PairsResult run_pairs(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
                      const PhaseLimit& limit = {}, const PairPass& pass = {});

// The second pass over node pairs: `rounds` (each every node's partner, -1
// idle, on one rail or every rail at once; the same on every rank) measured
// at the first pass's sizes and
// iteration counts (as long as it: a lossy link's mean is only as steady as
// the iterations it averages), within `seconds` (read on world rank 0:
// each round an even part of what is left, a slow link's bandwidth with a
// smaller message where the full one would not fit it). The matrices of
// what they measured (the nodes', each rail's) are complete on world rank 0;
// a round of one rail has that rail's figures and no node pair's.
// With `latency_bursts` above one, each pair's small message runs that many
// times in all, spread over the pass (before the rounds and after them) and
// each rail on its own, and its latency is the fastest: a wait for a core
// slows one burst, a slow link every one. With `bandwidth_bursts` above one,
// the rounds run that many times over (the later times the large message
// only), and a pair's bandwidth is its fastest: where ranks share cores a
// healthy pair's exchanges now and then run at a twentieth of its rate for
// seconds, while a slow link is slow every time.
NodePairs run_pair_checks(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
                          const std::vector<PairRound>& rounds, std::uint64_t& wrong,
                          double seconds = unlimited_seconds, int latency_bursts = 1, int bandwidth_bursts = 1);

// World rank 0's rounds on every rank.
std::vector<PairRound> broadcast_rounds(const Comm& world, const std::vector<PairRound>& rounds, int nodes);

// The bisection test (engine/placement.hpp): for each planned halving
// (plan_bisection, with each node's latency island when known: the same on
// every rank), every
// pair of the halving exchanges at once (send/recv in both directions at
// --pair-bytes, every rail), then its first pairs alone. Split and measured
// like the pair matrix, so it runs on any transport with split().
BisectionResult run_bisection(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
                              const std::vector<int>& island_of = {});

}  // namespace fabricbench
