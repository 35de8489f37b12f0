#include "fabricbench/engine/p2p_sweep.hpp"

#include <gtest/gtest.h>

#include "fabricbench/core/error.hpp"

namespace fabricbench {
namespace {

// Two nodes of two ranks: world ranks 0, 1 on "a" and 2, 3 on "b".
Layout two_by_two() { return layout_from(0, {"a", "a", "b", "b"}, {0, 0, 2, 2}, {0, 1, 0, 1}); }

std::string error_of(const P2PSweepConfig& config, const Layout& layout) {
  try {
    (void)p2p_sweep_ranks(config, layout);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(P2PSweepRanks, DefaultCrossesNodesWhenThereAreSeveral) {
  EXPECT_EQ(p2p_sweep_ranks({}, two_by_two()), (std::vector<int>{0, 2}));
  EXPECT_EQ(p2p_sweep_ranks({}, layout_from(0, {"a", "a", "a"}, {0, 0, 0}, {0, 1, 2})), (std::vector<int>{0, 1}));
}

TEST(P2PSweepRanks, ChosenRanksOrNodes) {
  P2PSweepConfig config;
  config.ranks = {3, 1};
  EXPECT_EQ(p2p_sweep_ranks(config, two_by_two()), (std::vector<int>{3, 1}));
  config.ranks.clear();
  config.nodes = {1, 0};
  EXPECT_EQ(p2p_sweep_ranks(config, two_by_two()), (std::vector<int>{2, 0}));
}

TEST(P2PSweepRanks, RefusesWhatDoesNotExist) {
  P2PSweepConfig config;
  config.ranks = {0, 4};
  EXPECT_EQ(error_of(config, two_by_two()), "--ranks 4: there are only 4 ranks (0 to 3)");
  config.ranks = {2, 2};
  EXPECT_EQ(error_of(config, two_by_two()), "--ranks: give two different ranks, e.g. 0,1");
  config.ranks.clear();
  config.nodes = {0, 2};
  EXPECT_EQ(error_of(config, two_by_two()), "--nodes 2: there are only 2 nodes (0 to 1)");
  EXPECT_EQ(error_of({}, layout_from(0, {"a"}, {0}, {0})), "p2p --sweep: needs 2 ranks or more (mpirun -np 2)");
}

TEST(P2PRecord, FiguresAsOsuReportsThem) {
  // Latency: 10 round trips of 1000 B in 1 ms: 100 us each, 50 us one way.
  const P2PRecord lat = make_p2p_record(P2PTest::latency, 1000, 64, 1e-3, 10);
  EXPECT_EQ(lat.window, 1);
  EXPECT_DOUBLE_EQ(lat.time_us, 100.0);
  EXPECT_DOUBLE_EQ(lat.latency_us, 50.0);
  EXPECT_DOUBLE_EQ(lat.bandwidth_gbs, 1000 / 50e-6 / 1e9);
  // bw: 4 windows of 8 messages of 1 MB in 4 ms: 8 MB per ms one way.
  const P2PRecord bw = make_p2p_record(P2PTest::bandwidth, 1000000, 8, 4e-3, 4);
  EXPECT_DOUBLE_EQ(bw.time_us, 1000.0);
  EXPECT_DOUBLE_EQ(bw.latency_us, 125.0);
  EXPECT_DOUBLE_EQ(bw.bandwidth_gbs, 8.0);
  // bibw: the same time moves twice the bytes.
  EXPECT_DOUBLE_EQ(make_p2p_record(P2PTest::bibandwidth, 1000000, 8, 4e-3, 4).bandwidth_gbs, 16.0);
}

}  // namespace
}  // namespace fabricbench
