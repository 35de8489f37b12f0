#include "fabricbench/engine/sweep.hpp"

#include <vector>

#include <gtest/gtest.h>

namespace fabricbench {
namespace {

TEST(Iterations, FillTheTimeBudgetWithinBounds) {
  IterationPolicy p;
  p.min_time_ms = 20;
  p.min_iters = 5;
  p.max_iters = 1000;
  EXPECT_EQ(choose_iterations(p, 1e-3), 20);    // 1 ms each: 20 fill 20 ms
  EXPECT_EQ(choose_iterations(p, 3e-3), 7);     // rounded up
  EXPECT_EQ(choose_iterations(p, 1.0), 5);      // slow: the lower bound
  EXPECT_EQ(choose_iterations(p, 1e-9), 1000);  // fast: the upper bound
  EXPECT_EQ(choose_iterations(p, 0.0), 1000);   // unmeasurably fast
}

TEST(SweepBudget, OnlyALargerSizeOfTheSameOpIsJudgedByTheLastMeasurement) {
  // The last: a 16 MiB all-reduce, 10 ms an iteration, 2 s of check and
  // warm-up before its first batch.
  const LastMeasured last{Op::allreduce, std::size_t{16} << 20, 10e-3, 2.0};
  // Another op, or a smaller size, is left to its own warm-up.
  EXPECT_FALSE(skip_before_warmup(last, Op::allgather, 256, 0.5, 1));
  EXPECT_FALSE(skip_before_warmup(last, Op::allreduce, 1024, 0.5, 1));
  // A larger all-reduce needs at least the last one's setup...
  EXPECT_TRUE(skip_before_warmup(last, Op::allreduce, std::size_t{32} << 20, 1.9, 1));
  EXPECT_FALSE(skip_before_warmup(last, Op::allreduce, std::size_t{32} << 20, 2.1, 1));
  // ...and a warm-up and an iteration at its time scaled by size: 64 MiB is
  // 40 ms an iteration, 5 warm-ups and one iteration 240 ms.
  const LastMeasured quick{Op::allreduce, std::size_t{16} << 20, 10e-3, 0.01};
  EXPECT_TRUE(skip_before_warmup(quick, Op::allreduce, std::size_t{64} << 20, 0.2, 5));
  EXPECT_FALSE(skip_before_warmup(quick, Op::allreduce, std::size_t{64} << 20, 0.3, 5));
  // Nothing measured yet: only an empty share skips.
  EXPECT_FALSE(skip_before_warmup(LastMeasured{}, Op::allreduce, 8, 1e-3, 1));
  EXPECT_TRUE(skip_before_warmup(LastMeasured{}, Op::allreduce, 8, 0.0, 1));
  EXPECT_TRUE(skip_before_warmup(last, Op::allgather, 256, -1.0, 1));
}

TEST(Iterations, FixedCountWins) {
  IterationPolicy p;
  p.fixed_iters = 42;
  EXPECT_EQ(choose_iterations(p, 1.0), 42);
  EXPECT_EQ(choose_iterations(p, 1e-9), 42);
}

TEST(Timing, BandwidthsFollowNcclTestsDefinitions) {
  const std::vector<double> samples{1e-3, 1e-3, 2e-3};
  // 4 MB all-reduce in 1 ms on 4 ranks: algbw 4 GB/s, busbw x 1.5.
  const Timing t = make_timing(Op::allreduce, 4, 4'000'000, 1e-3, 0.9e-3, 1.1e-3, samples, 3);
  EXPECT_DOUBLE_EQ(t.time_us, 1000.0);
  EXPECT_DOUBLE_EQ(t.time_min_us, 900.0);
  EXPECT_DOUBLE_EQ(t.time_max_us, 1100.0);
  EXPECT_DOUBLE_EQ(t.algbw_gbs, 4.0);
  EXPECT_DOUBLE_EQ(t.busbw_gbs, 6.0);
  EXPECT_DOUBLE_EQ(t.p50_us, 1000.0);
  EXPECT_EQ(t.iterations, 3);
  const Timing ag = make_timing(Op::allgather, 4, 4'000'000, 1e-3, 1e-3, 1e-3, samples, 3);
  EXPECT_DOUBLE_EQ(ag.busbw_gbs, 3.0);
}

TEST(Timing, OneRankAndZeroTimeDivideByNothing) {
  const Timing one = make_timing(Op::allreduce, 1, 1024, 1e-6, 1e-6, 1e-6, {}, 1);
  EXPECT_DOUBLE_EQ(one.busbw_gbs, 0.0);
  EXPECT_GT(one.algbw_gbs, 0.0);
  const Timing zero = make_timing(Op::sendrecv, 2, 1024, 0.0, 0.0, 0.0, {}, 1);
  EXPECT_EQ(zero.algbw_gbs, 0.0);
  EXPECT_EQ(zero.busbw_gbs, 0.0);
}

}  // namespace
}  // namespace fabricbench
