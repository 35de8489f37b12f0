#include <algorithm>

#include <gtest/gtest.h>

#include "fabricbench/engine/p2p_sweep.hpp"
#include "fabricbench/transport/mpi/mpi_transport.hpp"

namespace fabricbench {
namespace {

RunConfig sweep_config() {
  RunConfig config;
  config.iterations.fixed_iters = 3;
  config.iterations.warmup = 1;
  config.sizes = {1, 8, 4096, 65536};
  config.p2p_sweep.enabled = true;
  config.p2p_sweep.window = 8;
  return config;
}

// Every size has a latency, a bw and a bibw record, in size order, with
// figures that are positive and consistent with each other, and the data
// check of every size ran and found nothing wrong.
void expect_complete(const P2PSweepResult& sweep, const RunConfig& config) {
  ASSERT_EQ(sweep.records.size(), config.sizes.size() * 3);
  for (std::size_t i = 1; i < sweep.records.size(); ++i) EXPECT_LE(sweep.records[i - 1].bytes, sweep.records[i].bytes);
  for (const std::size_t bytes : config.sizes) {
    for (const P2PTest test : all_p2p_tests()) {
      const auto it = std::find_if(sweep.records.begin(), sweep.records.end(),
                                   [&](const P2PRecord& r) { return r.bytes == bytes && r.test == test; });
      ASSERT_NE(it, sweep.records.end()) << bytes << " " << name(test);
      EXPECT_EQ(it->iterations, 3);
      EXPECT_GT(it->time_us, 0.0);
      EXPECT_GT(it->bandwidth_gbs, 0.0);
      ASSERT_TRUE(it->wrong) << bytes;
      EXPECT_EQ(*it->wrong, 0U);
      EXPECT_EQ(it->window, test == P2PTest::latency ? 1 : 8);
      if (test == P2PTest::latency) {
        EXPECT_DOUBLE_EQ(it->latency_us, it->time_us / 2);
      } else {
        EXPECT_DOUBLE_EQ(it->latency_us, it->time_us / 8);
      }
    }
  }
  EXPECT_EQ(sweep.wrong, 0U);
}

TEST(P2PSweepMpi, DefaultPairMeasuresEveryTestAtEverySize) {
  const Comm world = Comm::world();
  if (world.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  MpiTransport transport(world);
  const Layout layout = discover_layout(world);
  const RunConfig config = sweep_config();
  const P2PSweepResult sweep = run_p2p_sweep(config, transport, world, layout);
  if (world.rank() != 0) {
    EXPECT_TRUE(sweep.records.empty());  // only world rank 0 keeps the result
    return;
  }
  EXPECT_EQ(sweep.ranks, (std::vector<int>{0, 1}));
  ASSERT_EQ(sweep.hosts.size(), 2U);
  expect_complete(sweep, config);
}

// A pair without world rank 0, given in reverse order: rank 0 still gets the
// figures, and the other ranks wait without deadlock.
TEST(P2PSweepMpi, ChosenPairAwayFromRankZero) {
  const Comm world = Comm::world();
  if (world.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  MpiTransport transport(world);
  const Layout layout = discover_layout(world);
  RunConfig config = sweep_config();
  config.p2p_sweep.ranks = {world.size() - 1, world.size() - 2};
  config.p2p_sweep.tests = {P2PTest::bibandwidth, P2PTest::latency, P2PTest::bandwidth};
  const P2PSweepResult sweep = run_p2p_sweep(config, transport, world, layout);
  if (world.rank() != 0) return;
  EXPECT_EQ(sweep.ranks, config.p2p_sweep.ranks);
  expect_complete(sweep, config);
  // The records of one size follow the order the tests were asked in.
  EXPECT_EQ(sweep.records[0].test, P2PTest::bibandwidth);
  EXPECT_EQ(sweep.records[1].test, P2PTest::latency);
}

TEST(P2PSweepMpi, UncheckedSweepSaysSo) {
  const Comm world = Comm::world();
  if (world.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  MpiTransport transport(world);
  const Layout layout = discover_layout(world);
  RunConfig config = sweep_config();
  config.check = false;
  config.sizes = {64};
  const P2PSweepResult sweep = run_p2p_sweep(config, transport, world, layout);
  if (world.rank() != 0) return;
  ASSERT_EQ(sweep.records.size(), 3U);
  for (const P2PRecord& r : sweep.records) EXPECT_FALSE(r.wrong);
}

}  // namespace
}  // namespace fabricbench
