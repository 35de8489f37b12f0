#include "fabricbench/engine/stragglers.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <sched.h>

#include <fmt/format.h>

#include "fabricbench/core/budget.hpp"
#include "fabricbench/core/stats.hpp"
#include "fabricbench/core/types.hpp"

namespace fabricbench {
namespace {

constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::size_t least_work_bytes = mib;
constexpr std::size_t most_work_bytes = 256 * mib;

OpSpec allreduce_of(std::size_t bytes, int ranks) {
  return OpSpec{Op::allreduce,
                DType::float32,
                RedOp::sum,
                Placement::out_of_place,
                0,
                counts_for(Op::allreduce, DType::float32, bytes, ranks)};
}

// The fastest and the slowest rank's time for one fill of `spec`'s buffers:
// the work is sized by the ranks at full pace, so a slow rank's work is that
// many times longer than the target, never the target itself.
struct FillTimes {
  double fastest_s = 0;
  double slowest_s = 0;
};

// The fastest and the slowest of every rank's `t`.
FillTimes across_ranks(const Comm& world, double t) {
  std::array<double, 2> extremes{t, -t};
  world.allreduce_max(std::span<double>(extremes));
  return {-extremes[1], extremes[0]};
}

FillTimes fill_times(Transport& transport, const Comm& world, const OpSpec& spec, bool prepare_too = false) {
  const SteadyClock::time_point start = SteadyClock::now();
  if (prepare_too) transport.prepare(spec);
  transport.fill(spec);
  return across_ranks(world, std::chrono::duration<double>(SteadyClock::now() - start).count());
}

// The fastest and the slowest rank's time per fill of `spec`'s (prepared)
// buffers, each rank filling them again until its fills took `least_s` or
// `most_fills` were done. One short fill under a CPU quota either runs
// inside a slice or waits out the rest of a period: timed alone, a rank held
// to a tenth of a core (1 ms in 10) filled 1 MiB as fast as the others in
// some runs and 10 times slower in others. Fills that add up to a period time
// its average pace; a rank too slow for a second fill is timed by its first.
FillTimes paced_fill_times(Transport& transport, const Comm& world, const OpSpec& spec) {
  constexpr double least_s = 20e-3;
  constexpr int most_fills = 64;
  const SteadyClock::time_point start = SteadyClock::now();
  double elapsed = 0;
  int fills = 0;
  while (fills < most_fills && elapsed < least_s) {
    transport.fill(spec);
    ++fills;
    elapsed = std::chrono::duration<double>(SteadyClock::now() - start).count();
  }
  return across_ranks(world, elapsed / fills);
}

// Whole MiB, within the bounds, scaled so one fill takes about pace_work_s.
std::size_t scaled_work(std::size_t bytes, double seconds) {
  const double wanted =
      seconds > 0 ? static_cast<double>(bytes) * pace_work_s / seconds : static_cast<double>(most_work_bytes);
  const double whole = std::round(wanted / static_cast<double>(mib)) * static_cast<double>(mib);
  return std::clamp(static_cast<std::size_t>(std::max(whole, 0.0)), least_work_bytes, most_work_bytes);
}

// This machine's kernel boot id ("" when unreadable) and the cores this rank may run on.
std::string machine_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

}  // namespace

std::vector<SharedCores> shared_cores(const Comm& world, const Layout& layout) {
  const std::string mine = fmt::format("{} {}", usable_cores(), machine_id());
  const std::vector<std::string> all = world.allgather(mine);
  std::vector<SharedCores> out;
  if (world.rank() != 0) return out;
  std::map<std::string, SharedCores> machines;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const std::size_t space = all[r].find(' ');
    const std::string id = space == std::string::npos ? std::string() : all[r].substr(space + 1);
    const int node = r < layout.node_of_rank.size() ? layout.node_of_rank[r] : 0;
    // Without a boot id, each node is taken for a machine of its own.
    SharedCores& m = machines[id.empty() ? fmt::format("node {}", node) : id];
    ++m.ranks;
    m.cores = std::max(m.cores, std::atoi(all[r].c_str()));
    if (std::find(m.nodes.begin(), m.nodes.end(), node) == m.nodes.end()) m.nodes.push_back(node);
  }
  for (auto& [id, m] : machines)
    if (m.cores > 0 && m.ranks > m.cores) out.push_back(m);
  return out;
}

std::string shared_device(const std::vector<std::string>& devices) {
  std::set<std::string> seen;
  for (const std::string& line : devices) {
    const std::size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string device = line.substr(colon + 2);
    if (!seen.insert(device).second) return device;
  }
  return {};
}

std::size_t size_pace_work(Transport& transport, const Comm& world, double seconds) {
  const int n = world.size();
  // Buffers made and filled at 1 MiB, a timed fill, then once more at the
  // scaled size, as a small fill is bound by its launch. Larger buffers cost
  // a slow rank as much per MiB to make and fill first as the first 1 MiB
  // did: the size is held to what `seconds` pays for (a rank held to a
  // tenth of a core spent 3.6 s making 72 MiB of buffers, more than the
  // whole round's share, and the round was skipped).
  OpSpec work = allreduce_of(least_work_bytes, n);
  const FillTimes first = fill_times(transport, world, work, true);
  const FillTimes warm = paced_fill_times(transport, world, work);
  // The slowest rank's making cost: the fastest rank's, times how much
  // slower the slowest fills, where that is less than its one cold make
  // measured. Under a CPU quota one cold make of 1 MiB took 60-130 ms against
  // the others' 8-12 ms, more than its pace explains (waits and fixed costs,
  // not a cost per MiB); sized from such single timings the work fell to
  // 2 MiB in 2 of 14 runs, inside one slice, and the rank came late in 23 of
  // 40 iterations rather than 35-40.
  double first_s = first.slowest_s;
  if (warm.fastest_s > 0 && first.fastest_s > 0)
    first_s = std::min(first_s, first.fastest_s * warm.slowest_s / warm.fastest_s);
  std::size_t most = most_work_bytes;
  if (world.rank() == 0 && std::isfinite(seconds) && first_s > 0) {
    most = std::clamp(static_cast<std::size_t>(seconds / first_s) * mib, least_work_bytes, most_work_bytes);
    // The slowest rank's iterations must fit too: pace_min_iterations of
    // them twice over in what a round gets (about `seconds`). Sized for the
    // fastest alone, a rank held to a tenth of a core under the sanitizers
    // fitted fewer, the round was skipped, and the slower a rank, the less
    // it was judged.
    if (warm.slowest_s > 0)
      most = std::min(most,
                      std::max(static_cast<std::size_t>(seconds / (2.0 * pace_min_iterations) / warm.slowest_s) * mib,
                               least_work_bytes));
  }
  most = world.broadcast_value(most, 0);
  std::size_t bytes = std::min(scaled_work(least_work_bytes, warm.fastest_s), most);
  work = allreduce_of(bytes, n);
  transport.prepare(work);
  const double fill_s = fill_times(transport, world, work).fastest_s;
  if (fill_s < 0.5 * pace_work_s && bytes < most) bytes = std::min(scaled_work(bytes, fill_s), most);
  return bytes;
}

PaceRound run_pace_round(Transport& transport, const Comm& world, const Layout& layout, std::size_t bytes,
                         double seconds) {
  const Window window(seconds);
  const int n = world.size();
  const bool lead = world.rank() == 0;
  PaceRound round;
  const OpSpec work = allreduce_of(bytes, n);
  transport.prepare(work);
  const OpSpec sync = allreduce_of(sizeof(float) * 2, n);
  transport.prepare(sync);

  // Iterations while the next one fits (rank 0 decides before each, from
  // the longest so far as its clock saw it, the wait for a slow rank
  // included, and every rank follows): a slow rank makes the round shorter,
  // never longer than its share.
  round.work_bytes = bytes;
  std::vector<double> work_s;
  std::vector<double> inside_s;
  double longest = 0;
  transport.barrier();
  for (int i = 0; i < pace_iterations; ++i) {
    int go = 1;
    if (lead && std::isfinite(seconds)) go = window.left_s() > longest ? 1 : 0;
    if (world.broadcast_value(go, 0) == 0) break;
    const SteadyClock::time_point start = SteadyClock::now();
    transport.fill(work);
    work_s.push_back(std::chrono::duration<double>(SteadyClock::now() - start).count());
    inside_s.push_back(transport.time_batch(sync, 1, false).seconds);
    longest = std::max(longest, std::chrono::duration<double>(SteadyClock::now() - start).count());
  }
  const auto iterations = static_cast<int>(work_s.size());
  if (iterations < pace_min_iterations) {
    round.seconds = window.elapsed_s();
    return round;
  }

  // One reduction of maxima: each iteration's longest time inside and its
  // shortest (negated), and each rank's upper-quartile work in its own slot (a
  // rank slowed in a quarter of its iterations or more shows there). Every
  // rank then knows, per iteration, how long after the first arrival it
  // came (the longest time less its own) and the fastest rank's work.
  const std::size_t k = inside_s.size();
  const auto ranks = static_cast<std::size_t>(n);
  const auto me = static_cast<std::size_t>(world.rank());
  std::vector<double> maxima(inside_s);
  for (const double t : inside_s) maxima.push_back(-t);
  maxima.resize(2 * k + ranks, -std::numeric_limits<double>::infinity());
  maxima[2 * k + me] = percentile(work_s, 0.75);
  world.allreduce_max(std::span<double>(maxima));
  const double fastest_work = *std::min_element(maxima.begin() + static_cast<std::ptrdiff_t>(2 * k), maxima.end());

  // Then each rank's slots, summed: the iterations it arrived last in, those
  // it came half the fastest rank's work or more after the first arrival,
  // and its median lateness.
  std::vector<double> lateness(k);
  std::vector<double> slots(3 * ranks, 0.0);
  for (std::size_t i = 0; i < k; ++i) {
    lateness[i] = maxima[i] - inside_s[i];
    if (inside_s[i] <= -maxima[k + i]) slots[me] += 1;
    if (lateness[i] >= late_share_of_work * fastest_work) slots[ranks + me] += 1;
  }
  slots[2 * ranks + me] = percentile(lateness, 0.5);
  world.allreduce_sum(std::span<double>(slots));

  round.iterations = iterations;
  for (std::size_t r = 0; r < ranks; ++r) {
    RankPace pace;
    pace.rank = static_cast<int>(r);
    pace.node = r < layout.node_of_rank.size() ? layout.node_of_rank[r] : 0;
    pace.local_rank = r < layout.local_rank_of_rank.size() ? layout.local_rank_of_rank[r] : 0;
    pace.work_us = maxima[2 * k + r] * 1e6;
    pace.last = static_cast<int>(std::lround(slots[r]));
    pace.late = static_cast<int>(std::lround(slots[ranks + r]));
    pace.lateness_us = slots[2 * ranks + r] * 1e6;
    round.ranks.push_back(pace);
  }
  round.seconds = window.elapsed_s();
  return round;
}

}  // namespace fabricbench
