#pragma once
// Pace rounds: every rank does the same fixed work, then joins a small
// all-reduce, iteration after iteration. Each rank stamps its arrival and
// its leaving on its own clock; every rank leaves the all-reduce at once, so
// a rank's clock is rank 0's shifted by how much later it left in most
// iterations, and on rank 0's clock the arrivals say how long after the
// first each rank came (its lateness) and which came last. A rank that comes late in
// most iterations, or very late in many, holds up every collective of a job
// (analysis/stragglers.hpp names it).

#include <cstddef>
#include <string>
#include <vector>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/comm/layout.hpp"
#include "fabricbench/records/stragglers.hpp"
#include "fabricbench/transport/transport.hpp"

namespace fabricbench {

// The round's iterations: at most this many, and no round with fewer (too
// few to tell "most" from chance).
inline constexpr int pace_iterations = 40;
inline constexpr int pace_min_iterations = 10;

// The work of one iteration: fills of the rank's buffers (on a GPU its
// memory, on the MPI transport the host's), as many as take the fastest rank
// about this long. Longer than the slice a CPU quota gives at a time, so a
// rank held to one waits in every iteration: with one 0.75 ms fill, inside
// the 1 ms slice of a rank held to a tenth of a core, it came late in only
// 18 to 25 of 40 iterations.
inline constexpr double pace_work_s = 5e-3;

// The buffers grow, from 1 MiB to 256 MiB, until the fastest rank's one
// fill takes half of this or more (out of the caches, past a GPU's launch
// cost), as far as the time a slow rank takes to make them allows.
inline constexpr double pace_fill_s = 1e-3;

// An iteration counts as late for a rank that came this share of the
// fastest rank's work (its median) or more after the first arrival.
inline constexpr double late_share_of_work = 0.5;

// Ranks that share one machine's CPU cores beyond one each: a machine (its
// kernel's boot id: hosts in containers or namespaces of one machine share
// it) whose ranks outnumber the cores they may run on. On rank 0; empty
// where every rank has a core of its own. Collective.
struct SharedCores {
  int ranks = 0;
  int cores = 0;
  std::vector<int> nodes;  // the node indices on that machine
};
std::vector<SharedCores> shared_cores(const Comm& world, const Layout& layout);

// The device two ranks share, from the run's "rank R: <host GPU ...>" lines
// (RunInfo::devices): the first text after "rank R: " that two lines hold;
// empty when every rank has a device of its own.
std::string shared_device(const std::vector<std::string>& devices);

// The work of the pace rounds (the same for both, whose buffers it leaves
// made): the buffers' size and the fills of them per iteration. `seconds`
// (rank 0's) is the sizing's and the two rounds' together: sized in steps
// that spend at most a third of it, a slow rank's making and fills
// included, and held to what lets the slowest rank's iterations run the
// fewest of them, three times over, in each round of what is left. Collective.
struct PaceWork {
  std::size_t bytes = 0;
  int fills = 1;
};
PaceWork size_pace_work(Transport& transport, const Comm& world, double seconds);

// The shift of one clock against another from `shifts` (per sample,
// when one rank left the same collective less when the other did; both
// leave together but now and then one late): the middle of the densest run
// of them within `tolerance_s`. 0 for none.
double clock_shift(std::vector<double> shifts, double tolerance_s);

// The samples of the ranks' clocks before a pace round and after it, each
// a bare one-value all-reduce of `world` (a few hundred microseconds in all
// over TCP; one late leaving among them does not move the densest run).
inline constexpr int clock_samples = 8;

// Runs one round on every rank of `world` (the transport's group) with
// `work` (size_pace_work) within `seconds` (read on rank 0):
// iterations while the next fits, up to pace_iterations. Returns the round
// on every rank; `iterations` 0 when fewer than pace_min_iterations fitted
// (nothing judged). `layout` gives each rank's node. Collective.
PaceRound run_pace_round(Transport& transport, const Comm& world, const Layout& layout, const PaceWork& work,
                         double seconds);

}  // namespace fabricbench
