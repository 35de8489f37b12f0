#include "fabricbench/analysis/stragglers.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fabricbench/core/stats.hpp"

namespace fabricbench {
namespace {

std::string host_of(const std::vector<std::string>& hostnames, int node) {
  return node >= 0 && static_cast<std::size_t>(node) < hostnames.size() ? hostnames[static_cast<std::size_t>(node)]
                                                                        : fmt::format("node{}", node);
}

std::string time_text(double us) {
  return us >= 1000 ? fmt::format("{:.3g} ms", us / 1000) : fmt::format("{:.3g} us", us);
}

// The median work of the ranks other than `except` (-1: of every rank).
double median_work(const PaceRound& round, int except = -1) {
  std::vector<double> work;
  for (const RankPace& r : round.ranks)
    if (r.rank != except) work.push_back(r.work_us);
  return work.empty() ? 0.0 : percentile(work, 0.5);
}

// Late in most iterations, working slower or losing the time outside its
// work; or, late in fewer (a quarter or more), costing the collective
// pace_lost times the others' work per iteration all the same.
bool is_slow(const PaceRound& round, const RankPace& r) {
  const double others = median_work(round, r.rank);
  if (others <= 0) return false;
  if (late_in_most(r.late, round.iterations) &&
      (r.work_us >= pace_slower * others || r.lateness_us >= pace_lost * others))
    return true;
  return r.lost_us && *r.lost_us >= pace_lost * others &&
         static_cast<double>(r.late) >= pace_often * static_cast<double>(round.iterations);
}

// The collective's loss to it per iteration, where the round kept it.
std::string lost_text(const std::optional<double>& lost_us) {
  return lost_us ? fmt::format(", {} on average", time_text(*lost_us)) : std::string();
}

// What its work says against `others` (whose median `reference_us` is):
// slower, or at their pace with the time lost outside it.
std::string work_text(double work_us, double reference_us, const char* whose, const char* others) {
  const double ratio = reference_us > 0 ? work_us / reference_us : 0.0;
  if (ratio >= pace_slower) return fmt::format("{} work took {:.2g}x {} median", whose, ratio, others);
  return fmt::format(
      "{} work ran at {} pace ({:.2g}x their median), so the time was lost outside it: waiting for a CPU "
      "core or the GPU (another process, a CPU quota)",
      whose, others, ratio);
}

const RankPace* rank_in(const PaceRound& round, int rank) {
  for (const RankPace& r : round.ranks)
    if (r.rank == rank) return &r;
  return nullptr;
}

// The suspect's late count in `round` (the rank's, or the node's least late
// rank's), and whether it (every rank of it) is slow there.
int late_in(const PaceRound& round, const Straggler& s) {
  int least = round.iterations;
  for (const int rank : s.ranks) {
    const RankPace* r = rank_in(round, rank);
    least = std::min(least, r != nullptr ? r->late : 0);
  }
  return least;
}

// The time the collective lost to it (its least lost rank) per iteration in
// `round`, where the round kept it for each.
std::optional<double> lost_in(const PaceRound& round, const Straggler& s) {
  std::optional<double> least;
  for (const int rank : s.ranks) {
    const RankPace* r = rank_in(round, rank);
    if (r == nullptr || !r->lost_us) return std::nullopt;
    least = std::min(least.value_or(*r->lost_us), *r->lost_us);
  }
  return least;
}

bool slow_in(const PaceRound& round, const Straggler& s) {
  if (uneven_pace(round)) return false;
  return std::all_of(s.ranks.begin(), s.ranks.end(), [&round](int rank) {
    const RankPace* r = rank_in(round, rank);
    return r != nullptr && is_slow(round, *r);
  });
}

}  // namespace

bool late_in_most(int late, int iterations) {
  return iterations > 0 && static_cast<double>(late) > pace_most * static_cast<double>(iterations);
}

std::vector<const RankPace*> slow_ranks(const PaceRound& round) {
  std::vector<const RankPace*> out;
  if (round.iterations <= 0 || round.ranks.size() < 2) return out;
  for (const RankPace& r : round.ranks)
    if (is_slow(round, r)) out.push_back(&r);
  return out;
}

bool uneven_pace(const PaceRound& round) {
  return round.ranks.size() > 2 && 2 * slow_ranks(round).size() >= round.ranks.size();
}

std::vector<Straggler> pace_suspects(const PaceRound& round, const std::vector<std::string>& hostnames) {
  std::vector<Straggler> out;
  const std::vector<const RankPace*> slow = slow_ranks(round);
  if (slow.empty() || uneven_pace(round)) return out;
  const auto late = [&slow](const RankPace& r) { return std::find(slow.begin(), slow.end(), &r) != slow.end(); };

  std::vector<int> nodes;
  for (const RankPace& r : round.ranks)
    if (std::find(nodes.begin(), nodes.end(), r.node) == nodes.end()) nodes.push_back(r.node);
  std::sort(nodes.begin(), nodes.end());
  std::vector<int> named_nodes;
  for (const int node : nodes) {
    std::vector<const RankPace*> members;
    for (const RankPace& r : round.ranks)
      if (r.node == node) members.push_back(&r);
    if (members.size() < 2 || members.size() == round.ranks.size()) continue;
    if (!std::all_of(members.begin(), members.end(), [&late](const RankPace* r) { return late(*r); })) continue;
    Straggler s;
    s.kind = StragglerKind::slow_rank_node;
    s.node = node;
    s.host = host_of(hostnames, node);
    s.iterations = round.iterations;
    s.late = round.iterations;
    s.lateness_us = members.front()->lateness_us;
    s.lost_us = members.front()->lost_us;
    s.work_us = members.front()->work_us;
    for (const RankPace* m : members) {
      s.ranks.push_back(m->rank);
      s.late = std::min(s.late, m->late);
      s.last += m->last;
      s.lateness_us = std::min(s.lateness_us, m->lateness_us);
      if (s.lost_us && m->lost_us) s.lost_us = std::min(*s.lost_us, *m->lost_us);
      s.work_us = std::min(s.work_us, m->work_us);
    }
    std::vector<double> others;
    for (const RankPace& o : round.ranks)
      if (o.node != node) others.push_back(o.work_us);
    s.reference_us = percentile(others, 0.5);
    s.message = fmt::format(
        "every rank of {} ({}) came late to the all-reduce in {} or more of {} iterations, a median {} or more "
        "after the first rank{} (one of them last in {}); {}: {} as a whole is slow, not one of its GPUs",
        s.host, fmt::join(s.ranks, ", "), s.late, s.iterations, time_text(s.lateness_us), lost_text(s.lost_us), s.last,
        work_text(s.work_us, s.reference_us, "their", "the other nodes' ranks'"), s.host);
    named_nodes.push_back(node);
    out.push_back(std::move(s));
  }

  for (const RankPace& r : round.ranks) {
    if (!late(r) || std::find(named_nodes.begin(), named_nodes.end(), r.node) != named_nodes.end()) continue;
    int on_node = 0;
    for (const RankPace& o : round.ranks) on_node += o.node == r.node ? 1 : 0;
    Straggler s;
    s.kind = StragglerKind::slow_rank;
    s.ranks = {r.rank};
    s.node = r.node;
    s.host = host_of(hostnames, r.node);
    s.iterations = round.iterations;
    s.late = r.late;
    s.last = r.last;
    s.lateness_us = r.lateness_us;
    s.lost_us = r.lost_us;
    s.work_us = r.work_us;
    s.reference_us = median_work(round, r.rank);
    const std::string node_text =
        on_node == 1 ? fmt::format("it is {}'s only rank, so a slow rank and a slow node are one here", s.host)
                     : fmt::format("{}'s other ranks kept pace, so it is this rank, not the node", s.host);
    s.message = fmt::format(
        "rank {} ({} local rank {}) came late to the all-reduce in {} of {} iterations, a median {} after the "
        "first rank{} (last in {}); {}; {}",
        r.rank, s.host, r.local_rank, r.late, round.iterations, time_text(r.lateness_us), lost_text(r.lost_us), r.last,
        work_text(s.work_us, s.reference_us, "its", "the other ranks'"), node_text);
    out.push_back(std::move(s));
  }
  return out;
}

StragglersResult judge_stragglers(std::vector<PaceRound> rounds, const std::vector<std::string>& hostnames) {
  StragglersResult out;
  std::vector<Straggler> suspects =
      rounds.empty() ? std::vector<Straggler>{} : pace_suspects(rounds.front(), hostnames);
  if (!rounds.empty() && uneven_pace(rounds.front())) {
    const PaceRound& first = rounds.front();
    out.uneven = fmt::format(
        "{} of {} ranks came late to the all-reduce, working {}x or more slower than the others or losing {}x "
        "their work outside it: the ranks work at two paces, as where ranks share CPU cores or GPUs, or half of "
        "them are throttled; no one rank holds the others up",
        slow_ranks(first).size(), first.ranks.size(), pace_slower, pace_lost);
  }
  const PaceRound* second = rounds.size() >= 2 && rounds[1].iterations > 0 ? &rounds[1] : nullptr;
  for (Straggler& s : suspects) {
    if (second != nullptr) {
      s.again_iterations = second->iterations;
      s.again_late = late_in(*second, s);
    }
    s.confirmed = second != nullptr && slow_in(*second, s);
    if (*s.confirmed) {
      s.message += fmt::format("; measured again: late in {} of {}{}", s.again_late, s.again_iterations,
                               lost_text(lost_in(*second, s)));
      out.found.push_back(std::move(s));
    } else {
      s.message = fmt::format("not confirmed: {}; {}", s.message,
                              second != nullptr ? fmt::format("measured again, it was not slow (late in {} of {})",
                                                              s.again_late, s.again_iterations)
                                                : std::string("the second round did not fit in the time left (a "
                                                              "longer --budget gives it room)"));
      out.unconfirmed.push_back(std::move(s));
    }
  }
  out.rounds = std::move(rounds);
  return out;
}

std::vector<Cut> pace_cuts(const std::vector<PaceRound>& rounds, int wanted, Phase phase) {
  std::vector<Cut> cuts;
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    if (rounds[i].iterations >= wanted) continue;
    const std::string what = i == 0 ? "pace round (who every collective waits for)" : "second pace round";
    if (rounds[i].iterations == 0)
      cuts.push_back(Cut{phase, what, "skipped"});
    else
      cuts.push_back(
          Cut{phase, fmt::format("{}: {} of {} iterations", what, rounds[i].iterations, wanted), "fewer iterations"});
  }
  return cuts;
}

}  // namespace fabricbench
