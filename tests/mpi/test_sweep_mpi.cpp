#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "fabricbench/engine/sweep.hpp"
#include "fabricbench/transport/mpi/mpi_transport.hpp"

namespace fabricbench {
namespace {

// Wraps the MPI transport and logs every batch size. Rank 1 also runs its
// warm-ups slowly, so a rank that sized its own iteration count from its own
// warm-up would pick a different count from the others.
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
  void run_once(const OpSpec& s) override { inner_.run_once(s); }
  std::uint64_t verify(const OpSpec& s) override { return inner_.verify(s); }
  void barrier() override { inner_.barrier(); }
  AlgorithmChoice capture_choice(const OpSpec& s) override { return inner_.capture_choice(s); }
  double time_p2p(const P2PSpec& s, int iters) override { return inner_.time_p2p(s, iters); }
  std::unique_ptr<Transport> split(const Comm& sub, int color, int key) override {
    return inner_.split(sub, color, key);
  }
  BatchTiming time_batch(const OpSpec& s, int iters, bool per_iteration) override {
    if (rank_ == 1 && iters == warmup_) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    batches.push_back(iters);
    return inner_.time_batch(s, iters, per_iteration);
  }
  std::vector<std::int64_t> batches;
  int warmup_ = 0;

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
  transport.warmup_ = config.iterations.warmup;
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
  std::vector<Op> ends;
  SweepListener listener;
  listener.on_point = [&](std::span<const SweepRecord> recs) {
    ++points;
    EXPECT_EQ(recs.size(), 2U);
  };
  listener.on_op_done = [&](Op op) { ends.push_back(op); };
  const auto records = run_sweep(config, transport, world, listener);
  if (world.rank() == 0) {
    EXPECT_EQ(points, 4);
    EXPECT_EQ(ends, (std::vector<Op>{Op::broadcast, Op::reduce}));
    for (const auto& r : records) EXPECT_EQ(r.root, world.size() - 1);
  } else {
    EXPECT_EQ(points, 0);
  }
}

}  // namespace
}  // namespace fabricbench
