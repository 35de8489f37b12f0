// Slow ranks and nodes from pace rounds: what is named, what is not, and the
// second round's confirmation.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fabricbench/analysis/causes.hpp"
#include "fabricbench/analysis/stragglers.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/engine/stragglers.hpp"
#include "fabricbench/results/result_consistency.hpp"

namespace fabricbench {
namespace {

const std::vector<std::string> hosts{"gpu-node-a", "gpu-node-b", "gpu-node-c", "gpu-node-d"};

// `nodes` nodes of `per_node` ranks working 1000 us each; every rank comes
// late in a fifth of the iterations and last in an even share, unless
// changed after.
PaceRound even_round(int nodes, int per_node, int iterations) {
  PaceRound round;
  round.iterations = iterations;
  round.work_bytes = 8 << 20;
  const int ranks = nodes * per_node;
  for (int r = 0; r < ranks; ++r)
    round.ranks.push_back(
        RankPace{r, r / per_node, r % per_node, 1000.0, iterations / ranks, iterations / 5, 300.0, {}});
  return round;
}

// Makes `rank` come late in `late` iterations (last in all of them) with `work_us` of work.
void make_slow(PaceRound& round, int rank, int late, double work_us) {
  RankPace& r = round.ranks[static_cast<std::size_t>(rank)];
  r.late = late;
  r.last = late;
  r.work_us = work_us;
  r.lateness_us = work_us - 1000.0;
}

// Two ranks leave each collective together, one clock 3 ms ahead of the
// other, except where one was held inside (late by 1 to 10 ms, in more than
// half the iterations) or the other was: the shift is the together-leaving
// one, not the median of all.
TEST(Stragglers, ClockShiftIsWhereTheIterationsLeftTogether) {
  std::vector<double> shifts;
  for (int i = 0; i < 15; ++i) shifts.push_back(3e-3 + (i % 3) * 10e-6);
  for (int i = 0; i < 23; ++i) shifts.push_back(3e-3 + 1e-3 + i * 0.4e-3);
  shifts.push_back(3e-3 - 4e-3);
  shifts.push_back(3e-3 - 8e-3);
  const double shift = clock_shift(shifts, 0.5e-3);
  EXPECT_NEAR(shift, 3e-3, 20e-6);
  EXPECT_EQ(clock_shift({}, 1e-3), 0.0);
  EXPECT_EQ(clock_shift({-2.0}, 1e-3), -2.0);
}

TEST(Stragglers, LateInMostIsMoreThanHalf) {
  EXPECT_TRUE(late_in_most(21, 40));
  EXPECT_FALSE(late_in_most(20, 40));
  EXPECT_TRUE(late_in_most(10, 10));
  EXPECT_FALSE(late_in_most(5, 0));
}

TEST(Stragglers, EvenArrivalsNameNothing) {
  EXPECT_TRUE(pace_suspects(even_round(4, 2, 40), hosts).empty());
  EXPECT_TRUE(pace_suspects(even_round(1, 4, 40), hosts).empty());
  EXPECT_TRUE(pace_suspects(even_round(2, 1, 40), hosts).empty());
  EXPECT_TRUE(pace_suspects(PaceRound{}, hosts).empty());
}

TEST(Stragglers, OneSlowRankIsThatRankNotItsNode) {
  PaceRound round = even_round(4, 2, 40);
  make_slow(round, 3, 34, 6000.0);
  const std::vector<Straggler> s = pace_suspects(round, hosts);
  ASSERT_EQ(s.size(), 1U);
  EXPECT_EQ(s[0].kind, StragglerKind::slow_rank);
  EXPECT_EQ(s[0].ranks, std::vector<int>{3});
  EXPECT_EQ(s[0].host, "gpu-node-b");
  EXPECT_EQ(s[0].late, 34);
  EXPECT_DOUBLE_EQ(s[0].reference_us, 1000.0);
  EXPECT_NE(s[0].message.find("rank 3 (gpu-node-b local rank 1) came late to the all-reduce in 34 of 40"),
            std::string::npos)
      << s[0].message;
  EXPECT_NE(s[0].message.find("its work took 6x the other ranks' median"), std::string::npos) << s[0].message;
  EXPECT_NE(s[0].message.find("other ranks kept pace, so it is this rank, not the node"), std::string::npos);
}

TEST(Stragglers, LateAtEveryonesPaceIsNotSlow) {
  // Late in most iterations while working as fast as the others: it waits
  // on something else (a shared core's scheduler), and is not named.
  PaceRound round = even_round(4, 2, 40);
  make_slow(round, 3, 38, 1400.0);
  EXPECT_TRUE(pace_suspects(round, hosts).empty());
  // Slow work in only some iterations (late in half of them): not named either.
  make_slow(round, 3, 20, 6000.0);
  EXPECT_TRUE(pace_suspects(round, hosts).empty());
}

// A rank held to a slice of its core by a quota works at full speed inside
// each slice and comes late by far more than its work: the time is lost
// outside the work, and it holds every collective up all the same.
TEST(Stragglers, LateByTwiceTheWorkAtEveryonesPaceIsSlow) {
  PaceRound round = even_round(2, 1, 40);
  make_slow(round, 1, 32, 1050.0);
  round.ranks[1].lateness_us = 17800.0;
  const std::vector<Straggler> s = pace_suspects(round, hosts);
  ASSERT_EQ(s.size(), 1U);
  EXPECT_EQ(s[0].ranks, std::vector<int>{1});
  EXPECT_NE(s[0].message.find("its work ran at the other ranks' pace (1.1x their median), so the time was "
                              "lost outside it: waiting for a CPU core or the GPU"),
            std::string::npos)
      << s[0].message;
  // Late by less than twice the others' work: not named.
  round.ranks[1].lateness_us = 1900.0;
  EXPECT_TRUE(pace_suspects(round, hosts).empty());
}

// A rank held by a quota whose slice outlasts the work comes on time in
// most iterations and far too late in the rest: its median lateness is
// nothing, but the collective loses more per iteration to it than the
// others' whole work, and it is named on that.
TEST(Stragglers, TimeLostInAThirdOfTheIterationsIsSlow) {
  PaceRound round = even_round(2, 1, 40);
  make_slow(round, 1, 14, 1050.0);
  round.ranks[1].lateness_us = 40.0;
  round.ranks[1].lost_us = 14 * 9000.0 / 40;
  const std::vector<Straggler> s = pace_suspects(round, hosts);
  ASSERT_EQ(s.size(), 1U);
  EXPECT_EQ(s[0].ranks, std::vector<int>{1});
  ASSERT_TRUE(s[0].lost_us.has_value());
  EXPECT_DOUBLE_EQ(*s[0].lost_us, 3150.0);
  EXPECT_NE(s[0].message.find("came late to the all-reduce in 14 of 40 iterations, a median 40 us after the first "
                              "rank, 3.15 ms on average"),
            std::string::npos)
      << s[0].message;
  // The same loss in too few iterations (one, 126 ms late): not named.
  make_slow(round, 1, 1, 1050.0);
  round.ranks[1].lateness_us = 0.0;
  round.ranks[1].lost_us = 3150.0;
  EXPECT_TRUE(pace_suspects(round, hosts).empty());
  // Late as often, losing less than twice the others' work: not named.
  make_slow(round, 1, 14, 1050.0);
  round.ranks[1].lateness_us = 40.0;
  round.ranks[1].lost_us = 1900.0;
  EXPECT_TRUE(pace_suspects(round, hosts).empty());
  // A file written before the loss was kept judges on the count alone.
  round.ranks[1].lost_us.reset();
  EXPECT_TRUE(pace_suspects(round, hosts).empty());
}

TEST(Stragglers, EveryRankOfANodeSlowIsTheNode) {
  PaceRound round = even_round(4, 2, 40);
  make_slow(round, 4, 36, 3000.0);
  make_slow(round, 5, 38, 3200.0);
  const std::vector<Straggler> s = pace_suspects(round, hosts);
  ASSERT_EQ(s.size(), 1U);
  EXPECT_EQ(s[0].kind, StragglerKind::slow_rank_node);
  EXPECT_EQ(s[0].ranks, (std::vector<int>{4, 5}));
  EXPECT_EQ(s[0].host, "gpu-node-c");
  EXPECT_EQ(s[0].late, 36);
  EXPECT_DOUBLE_EQ(s[0].work_us, 3000.0);
  EXPECT_NE(s[0].message.find("gpu-node-c as a whole is slow"), std::string::npos) << s[0].message;
}

TEST(Stragglers, ASlowRankAndASlowNodeAtOnceAreBothNamed) {
  PaceRound round = even_round(4, 2, 40);
  make_slow(round, 1, 35, 5000.0);
  make_slow(round, 6, 38, 9000.0);
  make_slow(round, 7, 39, 9000.0);
  const std::vector<Straggler> s = pace_suspects(round, hosts);
  ASSERT_EQ(s.size(), 2U);
  EXPECT_EQ(s[0].kind, StragglerKind::slow_rank_node);
  EXPECT_EQ(s[0].host, "gpu-node-d");
  EXPECT_EQ(s[1].kind, StragglerKind::slow_rank);
  EXPECT_EQ(s[1].ranks, std::vector<int>{1});
}

TEST(Stragglers, OneRankPerNodeSaysRankAndNodeAreOne) {
  PaceRound round = even_round(3, 1, 40);
  make_slow(round, 1, 40, 4000.0);
  const std::vector<Straggler> s = pace_suspects(round, hosts);
  ASSERT_EQ(s.size(), 1U);
  EXPECT_NE(s[0].message.find("it is gpu-node-b's only rank, so a slow rank and a slow node are one here"),
            std::string::npos)
      << s[0].message;
  // Two ranks: the slow one of the two is named.
  PaceRound two = even_round(2, 1, 20);
  make_slow(two, 0, 19, 3000.0);
  ASSERT_EQ(pace_suspects(two, hosts).size(), 1U);
}

TEST(Stragglers, HalfTheRanksSlowIsTwoPacesNotAStraggler) {
  // 4 of 8 ranks slow (as where two ranks share each core): none is singled out.
  PaceRound round = even_round(4, 2, 40);
  for (int r : {0, 2, 4, 6}) make_slow(round, r, 36, 3000.0);
  EXPECT_TRUE(uneven_pace(round));
  EXPECT_TRUE(pace_suspects(round, hosts).empty());
  const StragglersResult judged = judge_stragglers({round}, hosts);
  EXPECT_TRUE(judged.found.empty());
  EXPECT_TRUE(judged.unconfirmed.empty());
  EXPECT_NE(judged.uneven.find("4 of 8 ranks came late to the all-reduce"), std::string::npos) << judged.uneven;
  const std::vector<Cause> causes = straggler_causes(judged);
  ASSERT_EQ(causes.size(), 1U);
  EXPECT_EQ(causes[0].level, Level::info);
  EXPECT_EQ(causes[0].kind, "uneven_pace");
}

TEST(Stragglers, SecondRoundConfirmsOrClears) {
  PaceRound first = even_round(4, 2, 40);
  make_slow(first, 3, 34, 6000.0);
  PaceRound again = even_round(4, 2, 30);
  make_slow(again, 3, 27, 6000.0);
  again.ranks[3].lost_us = 5200.0;
  StragglersResult confirmed = judge_stragglers({first, again}, hosts);
  ASSERT_EQ(confirmed.found.size(), 1U);
  EXPECT_TRUE(confirmed.unconfirmed.empty());
  // The second round's figures, its loss per iteration where it kept one.
  EXPECT_TRUE(confirmed.found[0].message.ends_with("; measured again: late in 27 of 30, 5.2 ms on average"))
      << confirmed.found[0].message;
  EXPECT_EQ(confirmed.found[0].confirmed, true);
  EXPECT_EQ(confirmed.found[0].again_late, 27);
  EXPECT_EQ(confirmed.found[0].again_iterations, 30);
  EXPECT_EQ(confirmed.rounds.size(), 2U);

  StragglersResult cleared = judge_stragglers({first, even_round(4, 2, 30)}, hosts);
  EXPECT_TRUE(cleared.found.empty());
  ASSERT_EQ(cleared.unconfirmed.size(), 1U);
  EXPECT_EQ(cleared.unconfirmed[0].confirmed, false);
  EXPECT_EQ(cleared.unconfirmed[0].message.rfind("not confirmed: ", 0), 0U);
  EXPECT_NE(cleared.unconfirmed[0].message.find("measured again, it was not slow"), std::string::npos);

  // Slow again, but so were half the ranks: not a confirmation.
  PaceRound two_paces = even_round(4, 2, 30);
  for (int r : {0, 3, 5, 6}) make_slow(two_paces, r, 28, 6000.0);
  EXPECT_TRUE(judge_stragglers({first, two_paces}, hosts).found.empty());

  PaceRound cut;  // the second round did not fit
  StragglersResult unmeasured = judge_stragglers({first, cut}, hosts);
  ASSERT_EQ(unmeasured.unconfirmed.size(), 1U);
  EXPECT_NE(unmeasured.unconfirmed[0].message.find("the second round did not fit in the time left"), std::string::npos);
}

TEST(Stragglers, ConfirmedIsAWarnWithAFixUnconfirmedIsInfo) {
  PaceRound first = even_round(4, 2, 40);
  make_slow(first, 3, 34, 6000.0);
  PaceRound again = even_round(4, 2, 30);
  make_slow(again, 3, 27, 6000.0);
  first.ranks[3].lost_us = 5400.0;
  const std::vector<Cause> warn = straggler_causes(judge_stragglers({first, again}, hosts));
  ASSERT_EQ(warn.size(), 1U);
  EXPECT_EQ(warn[0].level, Level::warn);
  EXPECT_EQ(warn[0].kind, "slow_rank");
  EXPECT_EQ(warn[0].subject, "rank 3 on gpu-node-b");
  EXPECT_FALSE(warn[0].cause.empty());
  EXPECT_NE(warn[0].fix.find("gpu-node-b"), std::string::npos);
  // The time lost per iteration is evidence where the round kept it.
  const auto mean_late = [](const Cause& c) {
    return std::find_if(c.evidence.begin(), c.evidence.end(),
                        [](const Evidence& e) { return e.what == "mean time after the first rank"; });
  };
  ASSERT_NE(mean_late(warn[0]), warn[0].evidence.end());
  EXPECT_EQ(mean_late(warn[0])->value, 5400.0);
  EXPECT_EQ(mean_late(warn[0])->unit, "us");
  first.ranks[3].lost_us.reset();
  const std::vector<Cause> unkept = straggler_causes(judge_stragglers({first, again}, hosts));
  ASSERT_EQ(unkept.size(), 1U);
  EXPECT_EQ(mean_late(unkept[0]), unkept[0].evidence.end());
  const std::vector<Cause> info = straggler_causes(judge_stragglers({first, even_round(4, 2, 30)}, hosts));
  ASSERT_EQ(info.size(), 1U);
  EXPECT_EQ(info[0].level, Level::info);
  EXPECT_EQ(info[0].kind, "not_confirmed");
  StragglersResult shared;
  shared.shared = "8 ranks share 2 CPU cores of one machine (a, b)";
  const std::vector<Cause> not_judged = straggler_causes(shared);
  ASSERT_EQ(not_judged.size(), 1U);
  EXPECT_EQ(not_judged[0].level, Level::info);
  EXPECT_EQ(not_judged[0].kind, "pace_not_judged");
}

TEST(Stragglers, ARoundTheShareEndedEarlyIsACut) {
  const PaceRound full = even_round(2, 2, 40);
  EXPECT_TRUE(pace_cuts({full, full}, 40, Phase::health).empty());
  const std::vector<Cut> cuts = pace_cuts({even_round(2, 2, 17), even_round(2, 2, 0)}, 40, Phase::health);
  ASSERT_EQ(cuts.size(), 2U);
  EXPECT_EQ(cuts[0].phase, Phase::health);
  EXPECT_EQ(cuts[0].what, "pace round (who every collective waits for): 17 of 40 iterations");
  EXPECT_EQ(cuts[0].action, "fewer iterations");
  EXPECT_EQ(cuts[1].what, "second pace round");
  EXPECT_EQ(cuts[1].action, "skipped");
}

TEST(Stragglers, SharedDeviceIsTheFirstGpuTwoRanksHold) {
  EXPECT_EQ(shared_device({"rank 0: a GPU 0 H200 0000:18:00.0 GPU-1", "rank 1: a GPU 1 H200 0000:2a:00.0 GPU-2"}), "");
  EXPECT_EQ(shared_device({"rank 0: a GPU 0 H200 0000:18:00.0 GPU-1", "rank 1: b GPU 0 H200 0000:18:00.0 GPU-3",
                           "rank 2: a GPU 0 H200 0000:18:00.0 GPU-1"}),
            "a GPU 0 H200 0000:18:00.0 GPU-1");
  EXPECT_EQ(shared_device({}), "");
}

TEST(Stragglers, ConsistencyRefusesANodeOutOfRange) {
  RunResult r;
  r.run.nodes = 2;
  r.run.ranks = 2;
  r.run.ranks_per_node = {1, 1};
  r.run.hostnames = {"a", "b"};
  r.stragglers = StragglersResult{};
  r.stragglers->rounds.push_back(even_round(2, 1, 20));
  EXPECT_NO_THROW(check_consistency(r));
  r.stragglers->rounds[0].ranks[1].node = 5;
  EXPECT_THROW(check_consistency(r), UsageError);
  r.stragglers->rounds[0].ranks[1].node = 1;
  r.stragglers->rounds[0].ranks[1].late = 21;
  EXPECT_THROW(check_consistency(r), UsageError);
}

}  // namespace
}  // namespace fabricbench
