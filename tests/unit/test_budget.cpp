#include "fabricbench/core/budget.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "fabricbench/core/stats.hpp"
#include "fabricbench/engine/multinode.hpp"
#include "fabricbench/engine/pairs.hpp"
#include "fabricbench/engine/sweep.hpp"

namespace fabricbench {
namespace {

TEST(Duration, SecondsMinutesHoursAndBareNumbers) {
  EXPECT_EQ(parse_duration_s("90"), 90.0);
  EXPECT_EQ(parse_duration_s("90s"), 90.0);
  EXPECT_EQ(parse_duration_s("5m"), 300.0);
  EXPECT_EQ(parse_duration_s("1.5h"), 5400.0);
  EXPECT_EQ(parse_duration_s("0.5s"), 0.5);
  for (const char* bad : {"", "s", "0", "0s", "-5s", "5x", "5 m", "m5", "1e3", "inf", "1..2s"})
    EXPECT_FALSE(parse_duration_s(bad).has_value()) << bad;
}

TEST(Budget, UnlimitedWithoutSeconds) {
  const Budget none;
  EXPECT_FALSE(none.limited());
  EXPECT_TRUE(std::isinf(none.share_s(Phase::sweep, {Phase::pairs})));
  EXPECT_TRUE(std::isinf(none.remaining_s()));
}

TEST(Budget, SharesWhatRemainsByWeightWithAReserve) {
  const auto start = SteadyClock::now();
  const Budget budget(100.0, start);
  // health 1, sweep 4, ladder 2, pairs 2, reserve 1: 10 parts of 100 s.
  EXPECT_NEAR(budget.share_s(Phase::health, {Phase::sweep, Phase::ladder, Phase::pairs}, start), 10.0, 1e-9);
  EXPECT_NEAR(budget.share_s(Phase::sweep, {Phase::ladder, Phase::pairs}, start), 100.0 * 4 / 9, 1e-9);
  EXPECT_NEAR(budget.share_s(Phase::pairs, {}, start), 100.0 * 2 / 3, 1e-9);
  // Time already spent is not shared again, and an overrun leaves nothing.
  const auto later = start + std::chrono::seconds(40);
  EXPECT_NEAR(budget.share_s(Phase::pairs, {}, later), 60.0 * 2 / 3, 1e-9);
  EXPECT_EQ(budget.share_s(Phase::pairs, {}, start + std::chrono::seconds(120)), 0.0);
}

TEST(Budget, ShortenKeepsAFractionOfWhatRemains) {
  const auto start = SteadyClock::now();
  Budget budget(60.0, start);
  const auto at = start + std::chrono::seconds(4);
  budget.shorten(0.5, at);  // 56 s left: 28 kept, the deadline at 32 s
  EXPECT_NEAR(budget.seconds(), 32.0, 1e-9);
  EXPECT_NEAR(budget.remaining_s(at), 28.0, 1e-9);
  EXPECT_NEAR(budget.share_s(Phase::pairs, {}, at), 28.0 * 2 / 3, 1e-9);
  Budget none;
  none.shorten(0.5, at);
  EXPECT_FALSE(none.limited());
}

TEST(Precision, HalfWidthShrinksWithSamplesAndIsInfiniteBelowTwo) {
  EXPECT_TRUE(std::isinf(relative_half_width(std::vector<double>{})));
  EXPECT_TRUE(std::isinf(relative_half_width(std::vector<double>{1.0})));
  EXPECT_EQ(relative_half_width(std::vector<double>{2.0, 2.0, 2.0}), 0.0);
  // Two samples 1 and 3: mean 2, sd sqrt(2), t(1 df) 12.706.
  EXPECT_NEAR(relative_half_width(std::vector<double>{1.0, 3.0}), 12.706 * std::sqrt(2.0) / std::sqrt(2.0) / 2.0, 1e-9);
  std::vector<double> few;
  std::vector<double> many;
  for (int i = 0; i < 10; ++i) few.push_back(i % 2 == 0 ? 1.0 : 1.2);
  for (int i = 0; i < 1000; ++i) many.push_back(i % 2 == 0 ? 1.0 : 1.2);
  EXPECT_LT(relative_half_width(many), relative_half_width(few) / 5);
}

TEST(Precision, MoreIterationsDoublesWithinBoundsAndStopsWhenMet) {
  IterationPolicy p;
  p.precision = 0.01;
  p.max_iters = 100;
  EXPECT_EQ(more_iterations(p, 5, 0.5, 1e-3, 10.0), 5);       // doubling
  EXPECT_EQ(more_iterations(p, 5, 0.005, 1e-3, 10.0), 0);     // precise enough
  EXPECT_EQ(more_iterations(p, 80, 0.5, 1e-3, 10.0), 20);     // up to max_iters
  EXPECT_EQ(more_iterations(p, 100, 0.5, 1e-3, 10.0), 0);     // at max_iters
  EXPECT_EQ(more_iterations(p, 5, 0.5, 1e-3, 3.5e-3), 3);     // what the time left holds
  EXPECT_EQ(more_iterations(p, 5, 0.5, 1e-3, -1.0), 0);       // none left
  EXPECT_EQ(more_iterations(p, 5, HUGE_VAL, 1e-3, 10.0), 5);  // one sample: unknown precision
  p.precision = 0;
  EXPECT_EQ(more_iterations(p, 5, 0.5, 1e-3, 10.0), 0);  // off
  p.precision = 0.01;
  p.fixed_iters = 5;
  EXPECT_EQ(more_iterations(p, 5, 0.5, 1e-3, 10.0), 0);  // --iters is exact
}

// More batches are spent only where they can still reach the target in the
// time left: the half-width falls as t / sqrt(batches).
TEST(Precision, MoreBatchesOnlyWhereTheTargetIsWithinReach) {
  IterationPolicy p;
  p.precision = 0.01;
  // 4 batches at 2%: about 6 batches in all would do; 2 more of 5 ms fit 80 ms.
  EXPECT_TRUE(precision_within_reach(p, 4, 0.02, 5e-3, 0.080));
  // At 5%: about 38 batches; 34 more of 5 ms do not fit 80 ms.
  EXPECT_FALSE(precision_within_reach(p, 4, 0.05, 5e-3, 0.080));
  EXPECT_TRUE(precision_within_reach(p, 4, 0.05, 5e-3, 0.200));
  EXPECT_TRUE(precision_within_reach(p, 4, 0.005, 5e-3, 0.0));       // met already
  EXPECT_TRUE(precision_within_reach(p, 1, HUGE_VAL, 5e-3, 0.080));  // unknown yet
  p.precision = 0;
  EXPECT_TRUE(precision_within_reach(p, 4, 0.05, 5e-3, 0.0));  // no target: more_iterations decides
  EXPECT_DOUBLE_EQ(student_t975(3), 3.182);
  EXPECT_DOUBLE_EQ(student_t975(100), 1.96);
  EXPECT_TRUE(std::isinf(student_t975(0)));
}

TEST(RandomPairs, TheOrderIsAPermutationFixedBySeed) {
  EXPECT_EQ(seat_order(5, 0), (std::vector<int>{0, 1, 2, 3, 4}));
  for (const int n : {2, 7, 64, 513}) {
    std::vector<int> order = seat_order(n, 42);
    EXPECT_EQ(order, seat_order(n, 42));
    std::sort(order.begin(), order.end());
    for (int i = 0; i < n; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
  }
  EXPECT_NE(seat_order(64, 1), seat_order(64, 2));
}

TEST(RandomPairs, KRoundsMeetEachNodeWithKDistinctPeers) {
  for (const int n : {4, 9, 100, 513}) {
    const std::vector<int> order = seat_order(n, 7);
    const int k = std::min(4, pair_round_count(n));
    std::vector<std::set<int>> met(static_cast<std::size_t>(n));
    for (int r = 0; r < k; ++r) {
      const std::vector<int> p = partners(n, r, order);
      for (int a = 0; a < n; ++a) {
        const int b = p[static_cast<std::size_t>(a)];
        if (b < 0) continue;
        EXPECT_EQ(p[static_cast<std::size_t>(b)], a);
        EXPECT_TRUE(met[static_cast<std::size_t>(a)].insert(b).second) << "met twice";
      }
    }
    for (int a = 0; a < n; ++a) EXPECT_GE(static_cast<int>(met[static_cast<std::size_t>(a)].size()), k - 1);
  }
}

TEST(RandomPairs, CostIsLinearAboveTheLimitAndQuadraticBelow) {
  EXPECT_EQ(full_pair_cost(4).rounds, 3);
  EXPECT_EQ(full_pair_cost(4).exchanges, 6);
  EXPECT_EQ(full_pair_cost(512).rounds, 511);
  EXPECT_EQ(full_pair_cost(512).exchanges, 512 * 511 / 2);
  EXPECT_EQ(random_pair_cost(512, 4).rounds, 4);
  EXPECT_EQ(random_pair_cost(512, 4).exchanges, 4 * 256);
  EXPECT_EQ(random_pair_cost(3, 4).rounds, 3);  // never more than the whole tournament

  PairConfig config;
  PairsResult small;
  plan_pairs(config, 64, small);
  EXPECT_EQ(small.mode, "full");
  EXPECT_EQ(small.rounds.size(), 63U);
  PairsResult large;
  plan_pairs(config, 65, large);
  EXPECT_EQ(large.mode, "random");
  EXPECT_EQ(large.seed, config.seed);
  EXPECT_EQ(large.rounds, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(large.rounds_planned, 4);
  config.sample = 8;  // an explicit sample keeps the tournament's order
  PairsResult sampled;
  plan_pairs(config, 65, sampled);
  EXPECT_EQ(sampled.mode, "full");
  EXPECT_EQ(sampled.rounds.size(), 8U);
}

}  // namespace
}  // namespace fabricbench
