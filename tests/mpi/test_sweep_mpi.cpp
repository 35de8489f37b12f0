#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "fabricbench/engine/sweep.hpp"
#include "fabricbench/transport/mpi/mpi_transport.hpp"

namespace fabricbench {
namespace {

// Wraps the MPI transport and logs every batch size. Rank 1 also runs its
// warm-ups (single iterations) slowly, so a rank that sized its own
// iteration count, or ended its warm-up, from its own times would issue
// different batches from the others; and it claims a stamp cost 1000 times
// its own, so a rank that chose alone whether to stamp inside the timed
// batches would run one batch more or fewer.
class LoggingTransport final : public Transport {
 public:
  explicit LoggingTransport(const Comm& comm) : inner_(comm), rank_(comm.rank()) {}
  std::string_view name() const override { return inner_.name(); }
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::optional<std::string> unsupported(Op op, DType d, RedOp r) const override {
    return inner_.unsupported(op, d, r);
  }
  void prepare(const OpSpec& s) override { inner_.prepare(s); }
  void fill(const OpSpec& s) override { inner_.fill(s); }
  void run_once(const OpSpec& s) override {
    inner_.run_once(s);
    if (s.op == slowed_op && s.counts.bytes == slowed_bytes && slowed_check_s > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(slowed_check_s));
  }
  std::uint64_t verify(const OpSpec& s) override { return inner_.verify(s); }
  void barrier() override { inner_.barrier(); }
  AlgorithmChoice capture_choice(const OpSpec& s) override { return inner_.capture_choice(s); }
  double time_p2p(const P2PSpec& s, int iters) override { return inner_.time_p2p(s, iters); }
  std::unique_ptr<Transport> split(const Comm& sub, int color, int key) override {
    return inner_.split(sub, color, key);
  }
  BatchTiming time_batch(const OpSpec& s, int iters, bool per_iteration) override {
    if (rank_ == 1 && iters == 1 && ++slow_ % 2 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    batches.push_back(iters);
    ++runs;
    BatchTiming t = inner_.time_batch(s, iters, per_iteration);
    if (s.op == slowed_op && s.counts.bytes == slowed_bytes && slowed_calls != 0) {
      // Every rank, as a loaded core or a slow link would hold them all.
      std::this_thread::sleep_for(std::chrono::duration<double>(slowed_s * iters));
      t.seconds += slowed_s * iters;
      for (double& each : t.per_iteration) each += slowed_s;
      if (slowed_calls > 0) --slowed_calls;
    }
    // From the `corrupt_from`th batch on, this rank's output is wrong.
    if (corrupt_from > 0 && runs >= corrupt_from) inner_.output(s)[0] = std::byte{0x7F};
    return t;
  }
  double stamp_cost_s() const override { return inner_.stamp_cost_s() * (rank_ == 1 ? 1000.0 : 1.0); }
  std::vector<std::int64_t> batches;
  int runs = 0;
  int corrupt_from = 0;
  int slow_ = 0;
  int warmup_ = 0;
  // Batches of this op and size take slowed_s more an iteration, for the
  // first slowed_calls of them (-1: all).
  Op slowed_op = Op::allreduce;
  std::size_t slowed_bytes = 0;
  double slowed_s = 0;
  int slowed_calls = -1;
  double slowed_check_s = 0;  // the checked (untimed) run of that op and size takes this much more

 private:
  MpiTransport inner_;
  int rank_;
};

TEST(SweepMpi, AdaptiveIterationCountIsIdenticalOnAllRanks) {
  const Comm world = Comm::world();
  LoggingTransport transport(world);
  RunConfig config;
  config.ops = {Op::allreduce, Op::sendrecv};
  config.sizes = {8, 4096, 262144};
  config.iterations.warmup = 3;
  config.iterations.min_time_ms = 5;
  config.iterations.min_iters = 2;
  config.iterations.max_iters = 5000;
  const auto records = run_sweep(config, transport, world, {});

  // Every rank issued the same sequence of batch sizes.
  std::vector<std::int64_t> mine = transport.batches;
  std::vector<std::int64_t> longest(mine.size());
  std::vector<std::int64_t> negated(mine.size());
  for (std::size_t i = 0; i < mine.size(); ++i) {
    longest[i] = mine[i];
    negated[i] = -mine[i];
  }
  world.allreduce_max(longest);
  world.allreduce_max(negated);
  for (std::size_t i = 0; i < mine.size(); ++i) EXPECT_EQ(longest[i], -negated[i]) << "batch " << i;

  if (world.rank() == 0) {
    ASSERT_EQ(records.size(), 2U * 3U * 2U);
    for (const SweepRecord& r : records) {
      ASSERT_TRUE(r.timing);
      EXPECT_GE(r.timing->iterations, 2);
      EXPECT_LE(r.timing->iterations, 5000);
      EXPECT_EQ(r.timing->wrong, 0U);
      EXPECT_LE(r.timing->time_min_us, r.timing->time_us);
      EXPECT_GE(r.timing->time_max_us, r.timing->time_us);
      // Every measured point says what the library chose, or why it cannot.
      ASSERT_TRUE(r.choice);
      EXPECT_EQ(*r.choice, mpi_library_choice());
      EXPECT_DOUBLE_EQ(r.timing->busbw_gbs, r.timing->algbw_gbs * busbw_factor(r.op, world.size()));
    }
  } else {
    EXPECT_TRUE(records.empty());
  }
}

TEST(SweepMpi, TooSmallSizesAreSkippedWithAReasonNotZero) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  RunConfig config;
  config.ops = {Op::allgather};
  // Under 16 B per rank is skipped (nccl-tests' rounding); 16 B per rank is measured.
  const auto n = static_cast<std::size_t>(world.size());
  config.sizes = {16 * n - 4, 16 * n};
  config.iterations.fixed_iters = 2;
  config.inplace = InPlaceChoice::no;
  const auto records = run_sweep(config, transport, world, {});
  if (world.rank() != 0) return;
  ASSERT_EQ(records.size(), 2U);
  EXPECT_FALSE(records[0].timing);
  EXPECT_NE(records[0].skipped.find("under 16 B of float per rank"), std::string::npos) << records[0].skipped;
  ASSERT_TRUE(records[1].timing);
  EXPECT_EQ(records[1].bytes, 16 * n);
  EXPECT_EQ(records[1].count, 4U);
}

TEST(SweepMpi, ListenerSeesEveryPointAndOpEnd) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  RunConfig config;
  config.ops = {Op::broadcast, Op::reduce};
  config.root = world.size() - 1;
  config.sizes = {64, 1024};
  config.iterations.fixed_iters = 3;
  int points = 0;
  std::vector<Op> ops;
  SweepListener listener;
  listener.on_point = [&](std::span<const SweepRecord> recs) {
    ++points;
    EXPECT_EQ(recs.size(), 2U);
    ops.push_back(recs.front().op);
  };
  const auto records = run_sweep(config, transport, world, listener);
  if (world.rank() == 0) {
    EXPECT_EQ(points, 4);
    EXPECT_EQ(ops, (std::vector<Op>{Op::broadcast, Op::broadcast, Op::reduce, Op::reduce}));
    for (const auto& r : records) EXPECT_EQ(r.root, world.size() - 1);
  } else {
    EXPECT_EQ(points, 0);
  }
}

// Every measured point says where its time went, and the parts add up to no
// more than its total; adaptive counts come in several batches, warm-ups stop
// within -w, and the precision reached is judged against the target.
TEST(SweepMpi, EveryPointSaysWhereItsTimeWent) {
  const Comm world = Comm::world();
  LoggingTransport transport(world);
  RunConfig config;
  config.ops = {Op::allreduce};
  config.sizes = {64, 1 << 20};
  config.iterations.warmup = 4;
  config.iterations.min_time_ms = 4;
  config.iterations.max_time_ms = 20;
  SweepListener listener;
  int calls = 0;
  listener.on_point = [&calls](std::span<const SweepRecord>) { ++calls; };
  SweepCost cost;
  const auto records = run_sweep(config, transport, world, listener, unlimited_seconds, nullptr, &cost);
  if (world.rank() != 0) return;
  ASSERT_EQ(records.size(), 4U);
  double timed_ms = 0;
  for (const SweepRecord& r : records) {
    ASSERT_TRUE(r.timing && r.cost) << r.skipped;
    const PointCost& c = *r.cost;
    EXPECT_GE(c.batches, 4);
    EXPECT_GE(c.warmups, 1);
    EXPECT_LE(c.warmups, 4);
    EXPECT_GT(c.timed_ms, 0);
    EXPECT_GT(c.fill_ms + c.check_ms, 0);
    EXPECT_GE(c.agree_ms, 0);
    EXPECT_NEAR(c.fill_ms + c.check_ms + c.warmup_ms + c.timed_ms + c.samples_ms + c.agree_ms, c.total_ms, 1e-6);
    ASSERT_TRUE(r.timing->precision_met);
    ASSERT_TRUE(r.timing->precision);
    EXPECT_EQ(*r.timing->precision_met, *r.timing->precision <= config.iterations.precision);
    timed_ms += c.timed_ms;
  }
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cost.points, 4);
  EXPECT_NEAR(cost.timed_s * 1e3, timed_ms, 1e-6);
  EXPECT_GT(cost.timed_share(), 0);
  EXPECT_LE(cost.timed_share(), 1);
  EXPECT_GE(cost.wall_s, cost.timed_s + cost.fill_s + cost.check_s + cost.warmup_s + cost.output_s);
}

// The default check reads the first iteration only; --check-all also reads
// every warm-up and the last timed iteration, so an output that goes wrong
// after the first iteration is caught there, and only there.
TEST(SweepMpi, CheckAllCatchesAnOutputThatGoesWrongLater) {
  const Comm world = Comm::world();
  for (const bool all : {false, true}) {
    LoggingTransport transport(world);
    transport.corrupt_from = 1;  // from the first batch (a warm-up) on
    RunConfig config;
    config.ops = {Op::allreduce};
    config.sizes = {4096};
    config.inplace = InPlaceChoice::no;
    config.iterations.fixed_iters = 3;
    config.iterations.warmup = 2;
    config.check_all = all;
    const auto records = run_sweep(config, transport, world, {});
    if (world.rank() != 0) continue;
    ASSERT_EQ(records.size(), 1U);
    ASSERT_TRUE(records[0].timing && records[0].timing->wrong);
    // Every rank corrupts one element of its output from the first batch on.
    // The first check's run (run_once) precedes it; with --check-all the one
    // later warm-up and the last timed iteration are each read.
    const auto ranks = static_cast<std::uint64_t>(world.size());
    EXPECT_EQ(*records[0].timing->wrong, all ? 2 * ranks : 0U) << (all ? "--check-all" : "default");
  }
}

// With -w 1 the checked iteration is the only warm-up asked for, but it is
// untimed: one timed warm-up still follows, so the count is sized from a
// measured iteration, never the --max-iters a missing estimate gives.
TEST(SweepMpi, ACountIsSizedFromATimedWarmupEvenWithOneWarmup) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  RunConfig config;
  config.ops = {Op::allreduce};
  config.sizes = {4096};
  config.inplace = InPlaceChoice::no;
  config.iterations.warmup = 1;
  config.iterations.min_time_ms = 2;
  config.iterations.max_iters = 1000000;
  config.iterations.precision = 0;  // the first round only: its count is the sized one
  const auto records = run_sweep(config, transport, world, {});
  if (world.rank() != 0) return;
  ASSERT_EQ(records.size(), 1U);
  ASSERT_TRUE(records[0].timing && records[0].cost);
  EXPECT_EQ(records[0].cost->warmups, 2);  // the checked one, then a timed one
  EXPECT_LT(records[0].timing->iterations, config.iterations.max_iters);
}

// An all-reduce and a send/recv at 64 KiB, out of place, 5 iterations at
// the fewest.
RunConfig allreduce_and_sendrecv_at_64k() {
  RunConfig config;
  config.ops = {Op::allreduce, Op::sendrecv};
  config.sizes = {65536};
  config.inplace = InPlaceChoice::no;
  config.iterations.min_iters = 5;
  config.iterations.min_time_ms = 5;
  return config;
}

// A budgeted sweep of an all-reduce and a send/recv at 64 KiB, each given
// half of its 3 s (a part by bytes, the same for both): the all-reduce's
// first timed warm-up takes 0.4 s, so its share holds 2 of its 5 fewest
// iterations and it is cut; the sweep then has most of its time left, and
// takes it again, now fast and whole.
TEST(SweepMpi, ACutMeasurementIsTakenAgainWithTheTimeTheSweepHadLeft) {
  const Comm world = Comm::world();
  LoggingTransport transport(world);
  transport.slowed_bytes = 65536;
  transport.slowed_s = 0.4;
  transport.slowed_calls = 1;
  const RunConfig config = allreduce_and_sendrecv_at_64k();
  int retaken = 0;
  SweepListener listener;
  listener.on_retaken = [&retaken](std::span<const SweepRecord> point) {
    ++retaken;
    ASSERT_EQ(point.size(), 1U);
    EXPECT_EQ(point[0].op, Op::allreduce);
  };
  std::vector<Cut> cuts;
  const auto records = run_sweep(config, transport, world, listener, 3.0, &cuts);
  if (world.rank() != 0) return;
  ASSERT_EQ(records.size(), 2U);
  const SweepRecord& r = records[0];
  ASSERT_TRUE(r.timing) << r.skipped;
  ASSERT_TRUE(r.first_iterations);
  EXPECT_GE(*r.first_iterations, 1);
  EXPECT_LT(*r.first_iterations, 5);
  EXPECT_GE(r.timing->iterations, 5);
  EXPECT_TRUE(r.cut.empty());
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_TRUE(cuts.empty()) << cuts.front().what;
  EXPECT_EQ(retaken, 1);
  EXPECT_FALSE(records[1].first_iterations);
  EXPECT_TRUE(records[1].cut.empty());
}

// Every all-reduce iteration at 64 KiB takes 0.2 s: cut to 2 iterations in
// its 0.75 s share, it would need its setup and 5 more (1.45 s) where about
// 0.9 s is left, so it is not taken again and stays listed as cut.
TEST(SweepMpi, ACutTheTimeLeftCannotHoldStaysCut) {
  const Comm world = Comm::world();
  LoggingTransport transport(world);
  transport.slowed_bytes = 65536;
  transport.slowed_s = 0.2;
  const RunConfig config = allreduce_and_sendrecv_at_64k();
  int retaken = 0;
  SweepListener listener;
  listener.on_retaken = [&retaken](std::span<const SweepRecord>) { ++retaken; };
  std::vector<Cut> cuts;
  const auto records = run_sweep(config, transport, world, listener, 1.5, &cuts);
  if (world.rank() != 0) return;
  ASSERT_EQ(records.size(), 2U);
  ASSERT_TRUE(records[0].timing);
  EXPECT_LT(records[0].timing->iterations, 5);
  EXPECT_EQ(records[0].cut, "budget");
  EXPECT_FALSE(records[0].first_iterations);
  ASSERT_EQ(cuts.size(), 1U);
  EXPECT_EQ(cuts[0].what, "allreduce float 64 KiB out_of_place");
  EXPECT_EQ(cuts[0].action, "fewer iterations");
  EXPECT_EQ(retaken, 0);
}

// The checked run alone takes 0.4 s of a 0.3 s share: the point ends
// there, skipped, with no warm-up or timed batch after it. With the time
// for them, the same point goes on to both.
TEST(SweepMpi, ACheckThatOutlastsItsShareEndsThePointBeforeItsWarmUp) {
  const Comm world = Comm::world();
  LoggingTransport transport(world);
  transport.slowed_bytes = 65536;
  transport.slowed_check_s = 0.4;
  const RunConfig config = allreduce_and_sendrecv_at_64k();
  const OpSpec spec{Op::allreduce,
                    DType::float32,
                    RedOp::sum,
                    Placement::out_of_place,
                    0,
                    counts_for(Op::allreduce, DType::float32, 65536, world.size())};
  transport.prepare(spec);
  const Measurement skipped = measure_op(config, transport, world, spec, 0.3);
  EXPECT_TRUE(skipped.skipped);
  EXPECT_TRUE(skipped.cut);
  EXPECT_TRUE(transport.batches.empty());
  EXPECT_EQ(skipped.cost.warmups, 0);
  EXPECT_EQ(skipped.cost.warmup_ms, 0.0);
  EXPECT_GE(skipped.per_iteration_s, 0.4);  // the check's run stands for an iteration

  const Measurement whole = measure_op(config, transport, world, spec, 30.0);
  EXPECT_FALSE(whole.skipped);
  EXPECT_FALSE(whole.cut);
  EXPECT_GE(whole.timing.iterations, 5);
  EXPECT_FALSE(transport.batches.empty());
}

}  // namespace
}  // namespace fabricbench
