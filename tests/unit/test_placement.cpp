// Latency islands, the bisection arithmetic and the storage accounting on
// hand-made inputs.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "fabricbench/analysis/pairs.hpp"
#include "fabricbench/analysis/storage.hpp"
#include "fabricbench/engine/placement.hpp"
#include "fabricbench/engine/storage.hpp"
#include "scratch_dir.hpp"

namespace fabricbench {
namespace {

std::vector<std::string> hosts_of(int n) {
  std::vector<std::string> hosts;
  for (int i = 0; i < n; ++i) hosts.push_back("node" + std::to_string(i));
  return hosts;
}

// A symmetric latency matrix: `near` within a group, `far` across, with a
// small deterministic wobble so no two values are equal.
PairMatrix grouped(const std::vector<int>& group_of, double near, double far) {
  const int n = static_cast<int>(group_of.size());
  PairMatrix m(n);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const double base = group_of[static_cast<std::size_t>(a)] == group_of[static_cast<std::size_t>(b)] ? near : far;
      m.lat(a, b) = base * (1.0 + 0.01 * ((a + b) % 7));
    }
  return m;
}

std::vector<std::vector<int>> island_nodes(const IslandsResult& r) {
  std::vector<std::vector<int>> out;
  for (const LatencyIsland& i : r.islands) out.push_back(i.nodes);
  return out;
}

TEST(LatencyIslands, AFlatFabricIsOneIsland) {
  const IslandsResult r = find_latency_islands(grouped({0, 0, 0, 0, 0, 0}, 10, 10), hosts_of(6), 2.0);
  EXPECT_EQ(island_nodes(r), (std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5}}));
  EXPECT_EQ(r.islands[0].name, "A");
  EXPECT_EQ(r.islands[0].hosts.size(), 6U);
  EXPECT_FALSE(r.ratio);
  EXPECT_FALSE(r.in_island_latency_us);
  EXPECT_NE(r.message.find("one latency island: the fabric is flat"), std::string::npos) << r.message;
}

TEST(LatencyIslands, TwoRacksAreTwoIslandsWithTheirRatio) {
  const IslandsResult r = find_latency_islands(grouped({0, 0, 0, 1, 1, 1}, 2, 10), hosts_of(6), 2.0);
  EXPECT_EQ(island_nodes(r), (std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(r.islands[1].name, "B");
  EXPECT_EQ(r.islands[1].hosts, (std::vector<std::string>{"node3", "node4", "node5"}));
  ASSERT_TRUE(r.ratio);
  EXPECT_NEAR(*r.ratio, *r.cross_island_latency_us / *r.in_island_latency_us, 1e-12);
  EXPECT_GT(*r.ratio, 4.5);
  EXPECT_LT(*r.ratio, 5.5);
  EXPECT_NE(r.message.find("2 latency islands: A (node0, node1, node2); B (node3, node4, node5)"), std::string::npos)
      << r.message;
}

TEST(LatencyIslands, IslandsNeedNotBeContiguousAndCanBeThree) {
  const IslandsResult r = find_latency_islands(grouped({0, 1, 2, 0, 1, 2}, 1, 30), hosts_of(6), 2.0);
  EXPECT_EQ(island_nodes(r), (std::vector<std::vector<int>>{{0, 3}, {1, 4}, {2, 5}}));
  EXPECT_EQ(r.islands[2].name, "C");
}

TEST(LatencyIslands, OneSlowLinkOrOneSlowDirectionSplitsNothing) {
  PairMatrix m = grouped({0, 0, 0, 0}, 10, 10);
  m.lat(0, 1) = 200;  // one direction of one pair
  m.lat(1, 0) = 180;
  const IslandsResult r = find_latency_islands(m, hosts_of(4), 2.0);
  EXPECT_EQ(r.islands.size(), 1U) << r.message;
  EXPECT_NE(r.message.find("chain every node together"), std::string::npos) << r.message;
}

TEST(LatencyIslands, ARatioBelowTheThresholdIsFlatAndAboveItSplits) {
  const PairMatrix m = grouped({0, 0, 1, 1}, 10, 15);
  EXPECT_EQ(find_latency_islands(m, hosts_of(4), 2.0).islands.size(), 1U);
  EXPECT_EQ(find_latency_islands(m, hosts_of(4), 1.3).islands.size(), 2U);
}

TEST(LatencyIslands, OneMeasuredDirectionIsEnoughAndMissingPairsAreSkipped) {
  PairMatrix m(4);
  m.lat(0, 1) = 1;
  m.lat(2, 3) = 1.1;
  m.lat(0, 2) = 20;
  m.lat(3, 1) = 21;  // only from 3 to 1; 0-3 and 1-2 not measured
  const IslandsResult r = find_latency_islands(m, hosts_of(4), 2.0);
  EXPECT_EQ(island_nodes(r), (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
}

TEST(LatencyIslands, ANoisyPairInsideAnIslandDoesNotHideTheIslands) {
  // The largest step (10x) falls inside island A: cutting there alone leaves
  // node0 and node1 apart. The next step (3x) is the islands' edge.
  PairMatrix m(4);
  m.lat(2, 3) = 1;
  m.lat(0, 1) = 10;
  m.lat(0, 2) = 30;
  m.lat(0, 3) = 31;
  m.lat(1, 2) = 32;
  m.lat(1, 3) = 33;
  const IslandsResult r = find_latency_islands(m, hosts_of(4), 2.0);
  EXPECT_EQ(island_nodes(r), (std::vector<std::vector<int>>{{0, 1}, {2, 3}})) << r.message;
  ASSERT_TRUE(r.ratio);
  EXPECT_DOUBLE_EQ(*r.in_island_latency_us, 5.5);
  EXPECT_DOUBLE_EQ(*r.cross_island_latency_us, 31.5);
  // The same matrix with the islands' edge below the threshold: one island,
  // and the largest step's reason.
  const IslandsResult flat = find_latency_islands(m, hosts_of(4), 6.0);
  EXPECT_EQ(flat.islands.size(), 1U);
  EXPECT_NE(flat.message.find("node0 is far from every other node"), std::string::npos) << flat.message;
}

TEST(LatencyIslands, OfTheSplitsThatStandTheLargestStepIsTaken) {
  // Two levels: pairs of nodes (1 us), pairs of pairs (4 us), halves (40 us).
  // Both cuts give islands of two or more; the halves' edge is the larger
  // step (10x against 4x), though the pairs' split has the larger ratio.
  const std::vector<int> pair_of = {0, 0, 1, 1, 2, 2, 3, 3};
  PairMatrix m(8);
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      const int pa = pair_of[static_cast<std::size_t>(a)];
      const int pb = pair_of[static_cast<std::size_t>(b)];
      const double base = pa == pb ? 1 : pa / 2 == pb / 2 ? 4 : 40;
      m.lat(a, b) = base * (1.0 + 0.01 * ((a + b) % 5));
    }
  const IslandsResult r = find_latency_islands(m, hosts_of(8), 2.0);
  EXPECT_EQ(island_nodes(r), (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}})) << r.message;
}

TEST(LatencyIslands, ANodeFarFromAllOthersIsNotAnIsland) {
  const IslandsResult r = find_latency_islands(grouped({0, 0, 0, 1}, 1, 50), hosts_of(4), 2.0);
  EXPECT_EQ(r.islands.size(), 1U);
  EXPECT_NE(r.message.find("node3 is far from every other node"), std::string::npos) << r.message;
}

TEST(LatencyIslands, TwoNodesOrNothingMeasuredIsOneIsland) {
  EXPECT_EQ(find_latency_islands(grouped({0, 1}, 1, 100), hosts_of(2), 2.0).islands.size(), 1U);
  const IslandsResult none = find_latency_islands(PairMatrix(5), hosts_of(5), 2.0);
  ASSERT_EQ(none.islands.size(), 1U);
  EXPECT_EQ(none.islands[0].nodes.size(), 5U);
  EXPECT_NE(none.message.find("too few"), std::string::npos);
}

TEST(Bisection, HalvingsAreSeededPartitionsInTwoEqualHalves) {
  for (const int n : {2, 5, 8, 13}) {
    const std::vector<Halving> a = plan_halvings(n, 4, 42);
    const std::vector<Halving> b = plan_halvings(n, 4, 42);
    ASSERT_EQ(a.size(), 4U);
    for (std::size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k].half_a, b[k].half_a);
      EXPECT_EQ(a[k].half_b, b[k].half_b);
      EXPECT_EQ(a[k].half_a.size(), static_cast<std::size_t>(n / 2));
      EXPECT_EQ(a[k].half_b.size(), static_cast<std::size_t>(n / 2));
      std::set<int> seen(a[k].half_a.begin(), a[k].half_a.end());
      seen.insert(a[k].half_b.begin(), a[k].half_b.end());
      EXPECT_EQ(seen.size(), static_cast<std::size_t>(n / 2 * 2));  // each node once, one left out when odd
      for (const int node : seen) {
        EXPECT_GE(node, 0);
        EXPECT_LT(node, n);
      }
    }
  }
  // The generator is fixed bit for bit: this seed's first halving of 8 nodes.
  const Halving first = plan_halvings(8, 1, 1).front();
  const std::vector<Halving> again = plan_halvings(8, 1, 1);
  EXPECT_EQ(first.half_a, again.front().half_a);
  // Other seeds give other halvings (not all the same).
  std::set<std::vector<int>> firsts;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) firsts.insert(plan_halvings(8, 1, seed).front().half_a);
  EXPECT_GT(firsts.size(), 1U);
  EXPECT_TRUE(plan_halvings(1, 3, 1).empty());
}

BisectionPair pair(std::optional<double> alone, double loaded) {
  BisectionPair p;
  p.isolated_gbs = alone;
  p.loaded_gbs = loaded;
  return p;
}

TEST(Bisection, OversubscriptionIsTheWorstHalvingsAloneOverLoaded) {
  BisectionResult r;
  HalvingResult fine;
  fine.pairs = {pair(10, 9.5), pair(10, 10.5)};  // 20 / 20 = 1
  HalvingResult blocked;
  blocked.pairs = {pair(10, 4), pair(10, 6), pair(std::nullopt, 1)};  // the unmeasured pair is left out: 20 / 10
  r.halvings = {fine, blocked};
  analyze_bisection(r, 1.25);
  ASSERT_TRUE(r.halvings[0].oversubscription);
  EXPECT_DOUBLE_EQ(*r.halvings[0].oversubscription, 1.0);
  EXPECT_DOUBLE_EQ(r.halvings[1].isolated_gbs, 20);
  EXPECT_DOUBLE_EQ(r.halvings[1].loaded_gbs, 10);
  ASSERT_TRUE(r.oversubscription);
  EXPECT_DOUBLE_EQ(*r.oversubscription, 2.0);
  EXPECT_TRUE(r.blocking);
  EXPECT_EQ(r.limit, 1.25);
  EXPECT_NE(r.message.find("2.00:1 oversubscribed"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("halving 2"), std::string::npos) << r.message;
}

TEST(Bisection, WithinTheLimitIsNonBlockingAndNothingMeasuredHasNoRatio) {
  BisectionResult r;
  HalvingResult h;
  h.pairs = {pair(10, 9)};
  r.halvings = {h};
  analyze_bisection(r, 1.25);
  EXPECT_FALSE(r.blocking);
  EXPECT_NEAR(*r.oversubscription, 10.0 / 9.0, 1e-12);
  // Not every cut measured: what was seen, not "non-blocking".
  EXPECT_NE(r.message.find("no oversubscription beyond 1.25:1 in the 1 halving measured"), std::string::npos)
      << r.message;
  EXPECT_EQ(r.message.find("non-blocking"), std::string::npos) << r.message;

  BisectionResult empty;
  HalvingResult zero;
  zero.pairs = {pair(10, 0)};
  empty.halvings = {zero};
  analyze_bisection(empty, 1.25);
  EXPECT_FALSE(empty.oversubscription);
  EXPECT_FALSE(empty.blocking);
}

TEST(Bisection, TheIslandsAndTheNodeOrderCutFirstThenRandomNoneTwice) {
  // Islands {0, 2, 5} and {1, 3, 4}: their cut first, then the node order's.
  const std::vector<Halving> plan = plan_bisection(6, 5, 7, {0, 1, 0, 1, 1, 0});
  ASSERT_EQ(plan.size(), 5U);
  EXPECT_EQ(plan[0].source, "islands");
  EXPECT_EQ(plan[0].half_a, (std::vector<int>{0, 2, 5}));
  EXPECT_EQ(plan[0].half_b, (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(plan[1].source, "node order");
  EXPECT_EQ(plan[1].half_a, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(plan[1].half_b, (std::vector<int>{3, 4, 5}));
  std::set<std::vector<int>> cuts;
  for (const Halving& h : plan) {
    std::vector<int> a = h.half_a;
    std::vector<int> b = h.half_b;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_TRUE(cuts.insert(std::min(a, b)).second) << "a cut measured twice";
  }
  for (std::size_t k = 2; k < plan.size(); ++k) EXPECT_EQ(plan[k].source, "random");
  // One island, or none known: the node order's cut first. 4 nodes have 3
  // cuts: asking for 10 measures each once.
  const std::vector<Halving> four = plan_bisection(4, 10, 1, {0, 0, 0, 0});
  ASSERT_EQ(four.size(), 3U);
  EXPECT_EQ(four[0].source, "node order");
  // The random ones are plan_halvings' draws, a repeat skipped.
  const std::vector<Halving> draws = plan_halvings(8, 3, 9);
  const std::vector<Halving> eight = plan_bisection(8, 4, 9);
  EXPECT_EQ(eight[1].half_a, draws[0].half_a);
  EXPECT_TRUE(plan_bisection(1, 3, 1).empty());
}

HalvingResult halving(std::vector<int> a, std::vector<int> b) {
  HalvingResult h;
  h.half_a = std::move(a);
  h.half_b = std::move(b);
  h.pairs = {pair(10, 10)};
  return h;
}

TEST(Bisection, SaysHowMuchOfTheCutSpaceItsHalvingsSampled) {
  // 4 nodes have 3 cuts through the middle; the same cut twice (its halves
  // named either way round) counts once.
  BisectionResult r;
  r.halvings = {halving({0, 1}, {2, 3}), halving({3, 2}, {1, 0}), halving({0, 2}, {1, 3})};
  analyze_bisection(r, 1.25);
  EXPECT_EQ(r.distinct_halvings, 2);
  EXPECT_EQ(r.halvings_possible, 3.0);
  ASSERT_TRUE(r.coverage);
  EXPECT_DOUBLE_EQ(*r.coverage, 2.0 / 3.0);
  EXPECT_NE(r.message.find("2 of 3 possible halvings measured (67%): a cut outside them goes unseen, "
                           "--bisection-halvings 3 measures every one"),
            std::string::npos)
      << r.message;

  r.halvings.push_back(halving({0, 3}, {1, 2}));
  analyze_bisection(r, 1.25);
  EXPECT_EQ(r.coverage, 1.0);
  EXPECT_NE(r.message.find("all 3 possible halvings measured"), std::string::npos) << r.message;
  EXPECT_EQ(r.message.rfind("non-blocking within 1.25:1", 0), 0U) << r.message;

  // 8 nodes: C(8, 4) / 2 = 35. 5 nodes: any one sits out, the other 4
  // split 3 ways: 15. Without the node count (an older file), the halves'.
  BisectionResult eight;
  eight.halvings = {halving({0, 1, 2, 3}, {4, 5, 6, 7})};
  analyze_bisection(eight, 1.25);
  EXPECT_EQ(eight.halvings_possible, 35.0);
  BisectionResult five;
  five.nodes = 5;
  five.halvings = {halving({0, 1}, {2, 3}), halving({4, 1}, {2, 3})};
  analyze_bisection(five, 1.25);
  EXPECT_EQ(five.halvings_possible, 15.0);
  EXPECT_EQ(five.distinct_halvings, 2);

  // Beyond a double: no count, a share of nothing, and the advice to sample more.
  std::vector<int> a(600);
  std::vector<int> b(600);
  std::iota(a.begin(), a.end(), 0);
  std::iota(b.begin(), b.end(), 600);
  BisectionResult huge;
  huge.halvings = {halving(a, b)};
  analyze_bisection(huge, 1.25);
  EXPECT_FALSE(huge.halvings_possible);
  EXPECT_EQ(huge.coverage, 0.0);
  EXPECT_NE(huge.message.find("more --bisection-halvings (up to 1000) sample more of them"), std::string::npos)
      << huge.message;

  // Halvings with no nodes named (nothing planned) have no cut space.
  BisectionResult unnamed;
  unnamed.halvings = {HalvingResult{}};
  analyze_bisection(unnamed, 1.25);
  EXPECT_FALSE(unnamed.coverage);
}

TEST(Storage, DefaultFileSizeOutgrowsThePageCacheShareWhenBuffered) {
  constexpr std::uint64_t gib = std::uint64_t{1} << 30;
  EXPECT_EQ(default_file_bytes(true, 512 * gib, 8), gib);
  EXPECT_EQ(default_file_bytes(false, 64 * gib, 8), 16 * gib);
  EXPECT_EQ(default_file_bytes(false, 2 * gib, 8), gib);
  EXPECT_EQ(default_file_bytes(false, 3 * gib + 1, 1) % (std::uint64_t{1} << 20), 0U);
}

TEST(Storage, NodesRowsGiveTheAggregateAndTheSlowestNode) {
  StorageResult r;
  r.file_bytes = 1000000000;
  r.io_mode = "direct";
  r.files_written = 4;
  r.nodes = {{0, "a", 2, 2000000000, 1.0, 0.5, 0, 0}, {1, "b", 2, 2000000000, 4.0, 0.4, 0, 0}};
  analyze_storage(r);
  EXPECT_EQ(r.bytes_written, 4000000000U);
  EXPECT_EQ(r.bytes_read, 4000000000U);
  EXPECT_DOUBLE_EQ(r.nodes[0].write_gbs, 2.0);
  EXPECT_DOUBLE_EQ(r.nodes[1].write_gbs, 0.5);
  EXPECT_DOUBLE_EQ(r.write_s, 4.0);
  EXPECT_DOUBLE_EQ(r.write_gbs, 1.0);  // every byte over the slowest writer's time
  EXPECT_DOUBLE_EQ(r.read_gbs, 8.0);
  EXPECT_EQ(r.slowest_write_node, 1);
  EXPECT_EQ(r.slowest_read_node, 0);
  EXPECT_NE(r.message.find("slowest node to write b (0.500 GB/s"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("to read a (4.000 GB/s"), std::string::npos) << r.message;

  StorageResult one;
  one.nodes = {{0, "a", 1, 10, 1, 1, 0, 0}};
  analyze_storage(one);
  EXPECT_FALSE(one.slowest_write_node);
}

class StorageFolder : public ScratchDirTest {};

TEST_F(StorageFolder, MustExistBeAFolderAndLeaveNothingBehind) {
  const std::string dir = dir_.string();
  EXPECT_EQ(storage_path_problem(dir), "");
  EXPECT_TRUE(std::filesystem::is_empty(dir_));  // the probe is gone
  EXPECT_EQ(storage_path_problem(dir + "/none"), "--storage-path " + dir + "/none: no such folder");
  std::ofstream(dir + "/file") << "x";
  EXPECT_EQ(storage_path_problem(dir + "/file"), "--storage-path " + dir + "/file: not a folder");
  EXPECT_EQ(storage_path_problem(""), "--storage-path: give a folder");
}

}  // namespace
}  // namespace fabricbench
