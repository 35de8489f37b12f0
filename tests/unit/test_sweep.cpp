#include "fabricbench/engine/sweep.hpp"

#include <vector>

#include <gtest/gtest.h>

#include "fabricbench/output/printer.hpp"

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

// A ladder's first step at another size expects its check to cost what the
// sweep's check of the same op cost per byte at its largest checked size
// (the cheaper placement there); ops without a checked record are absent.
TEST(SweepBudget, TheChecksCostPerByteComesFromTheLargestCheckedSize) {
  const auto record = [](Op op, std::size_t bytes, Placement placement, double fill_ms, double check_ms) {
    SweepRecord r;
    r.op = op;
    r.bytes = bytes;
    r.placement = placement;
    if (fill_ms + check_ms > 0) {
      PointCost c;
      c.fill_ms = fill_ms;
      c.check_ms = check_ms;
      r.cost = c;
    }
    return r;
  };
  const std::size_t mib = std::size_t{1} << 20;
  const std::vector<SweepRecord> records{
      record(Op::allreduce, mib, Placement::out_of_place, 1000, 1000),  // smaller: not the figure
      record(Op::allreduce, 64 * mib, Placement::out_of_place, 300, 340),
      record(Op::allreduce, 64 * mib, Placement::in_place, 500, 500),
      record(Op::allgather, 16 * mib, Placement::out_of_place, 80, 80),
      record(Op::allgather, 32 * mib, Placement::out_of_place, 0, 0),  // no check (skipped): no figure
      record(Op::sendrecv, 4 * mib, Placement::out_of_place, 0, 0),
  };
  const std::map<Op, double> per_byte = check_seconds_per_byte(records);
  ASSERT_EQ(per_byte.size(), 2U);
  EXPECT_DOUBLE_EQ(per_byte.at(Op::allreduce), 0.64 / static_cast<double>(64 * mib));
  EXPECT_DOUBLE_EQ(per_byte.at(Op::allgather), 0.16 / static_cast<double>(16 * mib));
  EXPECT_TRUE(check_seconds_per_byte({}).empty());
}

// A cut measurement is taken again at the sweep's end only where what is
// left holds its setup and its fewest iterations (a quarter more for the
// distribution's batch); the retakes share what is left by need.
TEST(SweepBudget, ARetakeIsGivenItsNeedOrItsPartByNeed) {
  EXPECT_DOUBLE_EQ(retake_need_s(0.4, 0.1, 5), 0.4 + 5 * 0.1 * 1.25);
  EXPECT_DOUBLE_EQ(retake_need_s(0.4, 0.1, 0), 0.4 + 0.1 * 1.25);  // at least one iteration
  EXPECT_EQ(retake_need_s(0.4, 0.0, 5), 0.0);                      // time per iteration unknown
  // Alone: all that is left.
  EXPECT_DOUBLE_EQ(retake_share_s(1.0, 1.0, 3.0), 3.0);
  // Two of needs 1 and 2 in 6 s: 2 s, then (after it) all 4 s the second's.
  EXPECT_DOUBLE_EQ(retake_share_s(1.0, 3.0, 6.0), 2.0);
  EXPECT_DOUBLE_EQ(retake_share_s(2.0, 2.0, 4.0), 4.0);
  // Needs over what is left: each is still given its own need while it fits.
  EXPECT_DOUBLE_EQ(retake_share_s(1.0, 5.0, 2.0), 1.0);
  EXPECT_EQ(retake_share_s(3.0, 3.0, 2.0), -1.0);  // more than is left
  EXPECT_EQ(retake_share_s(0.0, 3.0, 2.0), -1.0);  // need unknown
}

// A retaken record replaces its point and placement's, once; another
// placement, or a record never cut, is left alone.
TEST(SweepBudget, ARetakenRecordReplacesItsOwnOnly) {
  SweepRecord out;
  out.bytes = 4 << 20;
  out.ranks = 8;
  out.redop = RedOp::sum;
  out.timing = Timing{};
  out.timing->iterations = 3;
  out.cut = "budget";
  SweepRecord in = out;
  in.placement = Placement::in_place;
  std::vector<SweepRecord> kept{out, in};
  SweepRecord again = out;
  again.timing->iterations = 7;
  again.cut.clear();
  EXPECT_FALSE(keep_retaken(kept, again));  // not marked as measured again
  again.first_iterations = 3;
  EXPECT_TRUE(keep_retaken(kept, again));
  EXPECT_EQ(kept[0].timing->iterations, 7);
  EXPECT_TRUE(kept[0].cut.empty());
  EXPECT_EQ(kept[1].timing->iterations, 3);  // the in-place record is its own
  EXPECT_EQ(kept[1].cut, "budget");
  EXPECT_FALSE(keep_retaken(kept, again));  // already there
  again.bytes = 1 << 20;
  EXPECT_FALSE(keep_retaken(kept, again));  // no such point
}

// The line under the tables: the new figures, and what the row above holds.
TEST(SweepBudget, TheRetakenLineSaysWhatTheRowAboveHolds) {
  SweepRecord again;
  again.bytes = 4 << 20;
  again.timing = Timing{};
  again.timing->iterations = 5;
  again.timing->time_us = 28260.94;
  again.timing->busbw_gbs = 0.26;
  again.first_iterations = 3;
  EXPECT_EQ(retaken_line(again),
            "# measured again with the time the sweep had left: allreduce float 4 MiB out_of_place: 5 iterations "
            "(the table's row has the first measurement's 3, cut by the budget), 28260.94 us, busbw 0.26 GB/s\n");
  again.first_iterations = 0;
  again.cut = "budget";
  EXPECT_EQ(retaken_line(again),
            "# measured again with the time the sweep had left: allreduce float 4 MiB out_of_place: 5 iterations, "
            "still fewer than --min-iters (the table's row: skipped by the budget), 28260.94 us, busbw 0.26 GB/s\n");
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
