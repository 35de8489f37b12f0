#pragma once
// Slow ranks and slow nodes from the pace rounds (engine/stragglers.hpp),
// in two passes: the first round names suspects, a second round measured
// apart from it confirms them.

#include <string>
#include <vector>

#include "fabricbench/core/budget.hpp"
#include "fabricbench/records/stragglers.hpp"

namespace fabricbench {

// A rank is a suspect when it came late (RankPace::late) in most of a
// round's iterations (more than this share) and either its own work took
// pace_slower times the median of the other ranks' or more, or its median
// lateness is pace_lost times their work or more: working at everyone's
// pace when it runs, it loses that time outside the work, waiting for its
// core or GPU (a CPU quota, another process; a rank held to a tenth of a
// core by a quota worked at full speed within each slice and came 18 ms
// late). A rank late by less than that, at everyone's pace, is not named.
// Ranks that share cores or a GPU are not judged at all (the round does
// not run).
// A rank late in fewer iterations, pace_often of them or more, is a
// suspect too where the collective lost pace_lost times the others' work to
// it per iteration (its mean lateness): held by a CPU quota to a tenth of a
// core, with work shorter than the quota's slice, a rank came on time in
// half the iterations or more and some 9 ms late in the rest, and was
// cleared on a count of late iterations alone. One late iteration, however
// late, names no one.
inline constexpr double pace_most = 0.5;
inline constexpr double pace_often = 0.25;
inline constexpr double pace_slower = 1.5;
inline constexpr double pace_lost = 2.0;

// Whether `late` of `iterations` is more than pace_most of them.
bool late_in_most(int late, int iterations);

// The ranks slow by the rules above: where they are half the ranks or more
// (of more than 2), the ranks work at two paces and none is singled out.
std::vector<const RankPace*> slow_ranks(const PaceRound& round);
bool uneven_pace(const PaceRound& round);

// One round's suspects, from slow_ranks (none where the pace is uneven): a
// node with several ranks (not every rank of the job) whose ranks are all
// slow is one slow node; every other slow rank is a slow rank. `hostnames`
// by node index. Nothing from a round that measured nothing.
std::vector<Straggler> pace_suspects(const PaceRound& round, const std::vector<std::string>& hostnames);

// The rounds judged: the first round's suspects, each confirmed when the
// second round (rounds[1]) shows it slow again; unconfirmed when it does
// not, or when there was no second round (its message says which). A first
// round at two paces leaves `uneven` saying so, and names no one.
StragglersResult judge_stragglers(std::vector<PaceRound> rounds, const std::vector<std::string>& hostnames);

// What the share left out of the rounds, as the budget's cuts of `phase`:
// a round with no iterations was skipped; one with fewer than `wanted` is
// judged on what it has, and the cut says how many it had.
std::vector<Cut> pace_cuts(const std::vector<PaceRound>& rounds, int wanted, Phase phase);

}  // namespace fabricbench
