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

// The fastest rank's time for one fill of `spec`'s (prepared) buffers at
// its full pace (its quickest fill), and the slowest rank's at its best pace
// of every step so far (`best_s_per_byte`, this rank's, which this step
// updates: its pace in the window's second half), each rank filling them
// again until its fills took `least_s` and its second half holds
// `least_tail_fills` fills, or its fills took `most_s`.
// The fastest rank's mean fill, on a machine busy with other work, came out
// 2 to 5 times its fill in the round after it, and the work, sized to
// pace_work_s of it, fell to 1 to 2 ms: about a CPU quota's slice, inside
// which a rank held to a tenth of a core came on time in half the
// iterations.
// One short fill under a CPU quota either runs inside a slice or waits out
// the rest of a period: timed alone, a rank held to a tenth of a core (1 ms
// in 10) filled 1 MiB as fast as the others in some runs and 10 times
// slower in others. Fills that add up to several periods time its pace
// (over 20 ms, two periods, on a busy machine, such a rank's came out 10 to
// 32 times the others' fill in the round, enough to cap fills of 4 MiB at
// 3; hence 50 ms), but a step's fills start right after its making, which
// often spent the period's quota: one step's fills of 6 MiB took such a
// rank 18.6 ms each, 6 times its pace, which cut the fills per iteration to
// 4 (1.7 ms of work; with 9, 2.4 ms, it came late in only 24 of 40
// iterations). Its best step is one that started with a slice.
// Nor does a step's window start at that rank's pace: a quota lets a rank
// run a few milliseconds past its slice (the kernel throttles at its ticks
// and scheduling points) and takes it back in the periods after. Stopped
// after 64 fills (2.8 ms of the release build's 1 MiB fills), one step's
// timing was all such a burst, the held rank read as 1.7 to 17 times faster
// than its pace in the round (44 us a fill against 760), and its
// iterations took 50 to 60 ms where the sizing meant 20: 9 fitted, and the
// round was skipped. Hence the window's whole 50 ms, and the pace of its
// second half only: from the end of the last fill before the half (the
// window's start where none ended before it) to the end.
// Nor is 25 ms of a held rank its pace: its half held 3 or 4 fills (6.5 ms
// each at a tenth of a core, 0.65 ms at full pace), and a wait for the
// quota at either end of so few made it read 1.35 to 3.4 times its pace in
// the round. The work, cut to fit that pace, fell to one or two fills, about
// the rank's slice, and it came late in only 16 of 40 iterations. Hence
// fills enough in the second half, for a rank slow enough to need more
// time for them: timed over 24 fills, such a rank read 0.8 to 1.4 times its
// pace over 2 s (over the half of 50 ms, 0.9 to 3.2 times). A rank too slow
// for a second fill in `most_s` is timed by its first.
FillTimes paced_fill_times(Transport& transport, const Comm& world, const OpSpec& spec, double& best_s_per_byte,
                           double most_s) {
  constexpr double least_s = 50e-3;
  constexpr int least_tail_fills = 24;
  const SteadyClock::time_point start = SteadyClock::now();
  double elapsed = 0;
  double quickest = std::numeric_limits<double>::infinity();
  double half_from = 0;  // the end of the last fill before least_s / 2
  int fills_from = 0;    // and the fills done by then
  int fills = 0;
  while (elapsed < least_s || (fills - fills_from < least_tail_fills && elapsed < most_s)) {
    const double before = elapsed;
    transport.fill(spec);
    ++fills;
    elapsed = std::chrono::duration<double>(SteadyClock::now() - start).count();
    quickest = std::min(quickest, elapsed - before);
    if (elapsed < least_s / 2) {
      half_from = elapsed;
      fills_from = fills;
    }
  }
  const auto bytes = static_cast<double>(spec.counts.bytes);
  best_s_per_byte = std::min(best_s_per_byte, (elapsed - half_from) / (fills - fills_from) / bytes);
  return {across_ranks(world, quickest).fastest_s, across_ranks(world, best_s_per_byte).slowest_s * bytes};
}

// The buffers' next size, from one step's figures at `bytes` (`step_s`:
// the slowest rank's making and timing of them): up to 4 times larger, in
// whole MiB, to where the fastest rank's fill takes about pace_fill_s and no
// more than 256 MiB, and only as large as the slowest rank's making and
// timing (this step's, scaled) fits in half of `left_s` and its fill in
// `longest_s`. `bytes` itself where its fill takes half of pace_fill_s or
// more, or no larger size fits.
std::size_t next_work_bytes(std::size_t bytes, const FillTimes& fill, double step_s, double left_s, double longest_s) {
  if (fill.fastest_s >= 0.5 * pace_fill_s || bytes >= most_work_bytes) return bytes;
  const double now_mib = static_cast<double>(bytes) / static_cast<double>(mib);
  double mibs = fill.fastest_s > 0 ? now_mib * pace_fill_s / fill.fastest_s : 4 * now_mib;
  mibs = std::min({mibs, 4 * now_mib, static_cast<double>(most_work_bytes) / static_cast<double>(mib)});
  if (std::isfinite(left_s)) mibs = std::min(mibs, 0.5 * left_s / step_s * now_mib);
  if (std::isfinite(longest_s) && fill.slowest_s > 0) mibs = std::min(mibs, longest_s / fill.slowest_s * now_mib);
  return std::max(static_cast<std::size_t>(std::max(std::floor(mibs), 0.0)) * mib, bytes);
}

// Fills per iteration: about pace_work_s of the fastest rank's, at least
// one, at most 1000, and no more than the slowest rank's fit in `longest_s`.
int work_fills(const FillTimes& fill, double longest_s) {
  constexpr double most_fills = 1000;
  double fills = fill.fastest_s > 0 ? std::round(pace_work_s / fill.fastest_s) : 1.0;
  fills = std::min(fills, most_fills);
  if (std::isfinite(longest_s) && fill.slowest_s > 0) fills = std::min(fills, std::floor(longest_s / fill.slowest_s));
  return static_cast<int>(std::max(fills, 1.0));
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

PaceWork size_pace_work(Transport& transport, const Comm& world, double seconds) {
  // The sizing within a third of the share; the two rounds after it get
  // what it leaves, half each.
  const Window whole(seconds);
  const Window window(seconds / 3);
  const int n = world.size();
  // The slowest rank's iteration at most this long: room in each round for
  // pace_min_iterations three times over. Sized for the fastest alone, a
  // rank held to a tenth of a core under the sanitizers fitted fewer, the
  // round was skipped, and the slower a rank, the less it was judged; with
  // room for them once and a half, its pace, timed over 50 ms at 6 times the
  // others', came to 10 in the round (its 4.4 ms of work spread over five
  // of the quota's periods), and 9 iterations fitted. The rounds' time is
  // what the sizing leaves once its third is spent (or all that is left,
  // where less): sized from all that was left while it ran, the room was
  // twice, not three times, the fewest.
  const auto longest_s = [&whole, seconds] {
    return std::min(whole.left_s(), 2 * seconds / 3) / 2 / (3.0 * pace_min_iterations);
  };
  // Steps from 1 MiB: the buffers made and filled once (the making), then
  // their fill timed at pace on every rank, and the next size chosen from
  // what the step cost (next_work_bytes). Sized from one make of 1 MiB
  // instead, a rank held to a tenth of a core made 112 MiB in more than the
  // whole share in some runs, and the round was skipped.
  std::size_t bytes = least_work_bytes;
  double best_s_per_byte = std::numeric_limits<double>::infinity();
  for (;;) {
    const OpSpec spec = allreduce_of(bytes, n);
    const SteadyClock::time_point start = SteadyClock::now();
    transport.prepare(spec);
    transport.fill(spec);
    // A slow rank's window at most a quarter of what is left.
    const FillTimes fill = paced_fill_times(transport, world, spec, best_s_per_byte, window.left_s() / 4);
    const double step_s =
        across_ranks(world, std::chrono::duration<double>(SteadyClock::now() - start).count()).slowest_s;
    PaceWork next{bytes, 1};
    if (world.rank() == 0)
      next = {next_work_bytes(bytes, fill, step_s, window.left_s(), longest_s()), work_fills(fill, longest_s())};
    next = world.broadcast_value(next, 0);
    if (next.bytes == bytes) return next;
    bytes = next.bytes;
  }
}

double clock_shift(std::vector<double> shifts, double tolerance_s) {
  if (shifts.empty()) return 0;
  std::sort(shifts.begin(), shifts.end());
  std::size_t best = 0;
  std::size_t best_count = 0;
  for (std::size_t i = 0, j = 0; i < shifts.size(); ++i) {
    j = std::max(j, i);
    while (j < shifts.size() && shifts[j] - shifts[i] <= tolerance_s) ++j;
    if (j - i > best_count) {
      best = i;
      best_count = j - i;
    }
  }
  return shifts[best + best_count / 2];
}

PaceRound run_pace_round(Transport& transport, const Comm& world, const Layout& layout, const PaceWork& work,
                         double seconds) {
  const Window window(seconds);
  const int n = world.size();
  const bool lead = world.rank() == 0;
  PaceRound round;
  const OpSpec spec = allreduce_of(work.bytes, n);
  transport.prepare(spec);
  const OpSpec sync = allreduce_of(sizeof(float) * 2, n);
  transport.prepare(sync);

  // Iterations while the next one fits (rank 0 decides before each, from
  // the longest so far as its clock saw it, the wait for a slow rank
  // included, and every rank follows): a slow rank makes the round shorter,
  // never longer than its share.
  round.work_bytes = work.bytes;
  round.work_fills = work.fills;
  std::vector<double> work_s;
  std::vector<double> enter_s;  // this rank's clock, from the round's start
  double longest = 0;
  transport.barrier();
  const SteadyClock::time_point zero = SteadyClock::now();
  const auto since = [](SteadyClock::time_point from) {
    return std::chrono::duration<double>(SteadyClock::now() - from).count();
  };
  // Bare all-reduces of the world, no work before them, each rank stamping
  // when it left: the clocks' samples (below), before the round and after
  // it, both inside its share (each iteration goes only where the samples
  // after it fit too, as long as those before took).
  const auto samples = [&] {
    std::vector<double> left(static_cast<std::size_t>(clock_samples));
    std::array<double, 1> none{0.0};
    for (double& t : left) {
      world.allreduce_max(std::span<double>(none));
      t = since(zero);
    }
    return left;
  };
  const std::vector<double> before = samples();
  const double samples_s = before.back();
  for (int i = 0; i < pace_iterations; ++i) {
    int go = 1;
    if (lead && std::isfinite(seconds)) go = window.left_s() > longest + samples_s ? 1 : 0;
    if (world.broadcast_value(go, 0) == 0) break;
    const SteadyClock::time_point start = SteadyClock::now();
    for (int f = 0; f < work.fills; ++f) transport.fill(spec);
    work_s.push_back(since(start));
    enter_s.push_back(since(zero));
    (void)transport.time_batch(sync, 1, false);
    longest = std::max(longest, since(start));
  }
  const auto iterations = static_cast<int>(work_s.size());
  if (iterations < pace_min_iterations) {
    round.seconds = window.elapsed_s();
    return round;
  }
  const std::vector<double> after = samples();

  // Each rank's arrivals on rank 0's clock. A bare all-reduce ends for
  // every rank at once, so this rank's clock is rank 0's shifted by how much
  // later it left in most of the samples before the round (clock_shift),
  // and likewise after it; an arrival takes the shift drawn between the two
  // at its time (the clocks of two hosts may drift apart). Not the round's
  // own all-reduces: a rank held off its core inside one after its data
  // went out (a CPU quota's slice spent) leaves it late, and where that is
  // so in nearly every iteration the shift takes the wait in: a rank held to
  // a tenth of a core, its work about one slice, came out on time in all 25
  // iterations of one run, though each took about the quota's 10 ms period
  // against 1 ms of work. (Timed by its time inside the all-reduce instead,
  // such a rank read as if it had come first, and late in only 29 of 40
  // iterations.) The samples are the world's own all-reduces, not the
  // transport's: they cost a held rank little of its quota, and on GPUs
  // they need no stream.
  std::vector<double> reference(before);
  reference.insert(reference.end(), after.begin(), after.end());
  world.broadcast(std::as_writable_bytes(std::span<double>(reference)), 0);
  // The work's upper quartile first: the shift's tolerance is a part of the
  // fastest rank's.
  const auto ranks = static_cast<std::size_t>(n);
  const auto me = static_cast<std::size_t>(world.rank());
  std::vector<double> work_slots(ranks, -std::numeric_limits<double>::infinity());
  work_slots[me] = percentile(work_s, 0.75);
  world.allreduce_max(std::span<double>(work_slots));
  const double fastest_work = *std::min_element(work_slots.begin(), work_slots.end());
  const auto shift_of = [&](const std::vector<double>& left, std::size_t from) {
    std::vector<double> shifts(left.size());
    for (std::size_t i = 0; i < left.size(); ++i) shifts[i] = left[i] - reference[from + i];
    return clock_shift(shifts, 0.1 * fastest_work);
  };
  const double shift_before = shift_of(before, 0);
  const double shift_after = shift_of(after, before.size());
  const double from_s = before.back();
  const double span_s = after.front() - from_s;
  const std::size_t k = enter_s.size();
  std::vector<double> arrival(k);
  for (std::size_t i = 0; i < k; ++i) {
    const double along = span_s > 0 ? std::clamp((enter_s[i] - from_s) / span_s, 0.0, 1.0) : 0.0;
    arrival[i] = enter_s[i] - (shift_before + along * (shift_after - shift_before));
  }

  // One reduction of maxima: each iteration's last arrival and its first
  // (negated). Every rank then knows, per iteration, how long after the
  // first arrival it came. (Each rank's upper-quartile work, in which a rank
  // slowed in a quarter of its iterations or more shows, is in work_slots.)
  std::vector<double> maxima(arrival);
  for (const double t : arrival) maxima.push_back(-t);
  world.allreduce_max(std::span<double>(maxima));

  // Then each rank's slots, summed: the iterations it arrived last in, those
  // it came half the fastest rank's work or more after the first arrival,
  // its median lateness and its mean (the time the collective waited for it
  // per iteration: a rank on time in most iterations and very late in the
  // rest shows there, not in the median).
  std::vector<double> lateness(k);
  std::vector<double> slots(4 * ranks, 0.0);
  for (std::size_t i = 0; i < k; ++i) {
    lateness[i] = arrival[i] + maxima[k + i];
    if (arrival[i] >= maxima[i]) slots[me] += 1;
    if (lateness[i] >= late_share_of_work * fastest_work) slots[ranks + me] += 1;
  }
  const SampleStats late_by = summarize(lateness);
  slots[2 * ranks + me] = late_by.p50;
  slots[3 * ranks + me] = late_by.mean;
  world.allreduce_sum(std::span<double>(slots));

  round.iterations = iterations;
  for (std::size_t r = 0; r < ranks; ++r) {
    RankPace pace;
    pace.rank = static_cast<int>(r);
    pace.node = r < layout.node_of_rank.size() ? layout.node_of_rank[r] : 0;
    pace.local_rank = r < layout.local_rank_of_rank.size() ? layout.local_rank_of_rank[r] : 0;
    pace.work_us = work_slots[r] * 1e6;
    pace.last = static_cast<int>(std::lround(slots[r]));
    pace.late = static_cast<int>(std::lround(slots[ranks + r]));
    pace.lateness_us = slots[2 * ranks + r] * 1e6;
    pace.lost_us = slots[3 * ranks + r] * 1e6;
    round.ranks.push_back(pace);
  }
  round.seconds = window.elapsed_s();
  return round;
}

}  // namespace fabricbench
