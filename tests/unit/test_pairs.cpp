#include "fabricbench/analysis/pairs.hpp"
#include "fabricbench/engine/pairs.hpp"

#include <set>
#include <utility>

#include <gtest/gtest.h>

namespace fabricbench {
namespace {

TEST(PairRounds, EveryPairMeetsExactlyOnce) {
  for (int n = 2; n <= 9; ++n) {
    std::set<std::pair<int, int>> met;
    const int rounds = pair_round_count(n);
    EXPECT_EQ(rounds, n % 2 == 0 ? n - 1 : n);
    for (int r = 0; r < rounds; ++r) {
      const std::vector<int> p = partners(n, r);
      int idle = 0;
      for (int i = 0; i < n; ++i) {
        const int j = p[static_cast<std::size_t>(i)];
        if (j < 0) {
          ++idle;
          continue;
        }
        EXPECT_NE(i, j);
        EXPECT_EQ(p[static_cast<std::size_t>(j)], i) << "partners are mutual";
        if (i < j) {
          EXPECT_TRUE(met.insert({i, j}).second) << "pair met twice: " << i << "," << j;
        }
      }
      EXPECT_EQ(idle, n % 2) << "n=" << n << " round " << r;
    }
    EXPECT_EQ(static_cast<int>(met.size()), n * (n - 1) / 2) << "n=" << n;
  }
  EXPECT_EQ(pair_round_count(1), 0);
  EXPECT_TRUE(pair_rounds(1, 0).empty());
}

TEST(PairRounds, SamplingSpreadsRounds) {
  EXPECT_EQ(pair_rounds(8, 0).size(), 7U);
  EXPECT_EQ(pair_rounds(8, 3), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(pair_rounds(8, 100).size(), 7U);
  EXPECT_EQ(pair_rounds(1000, 10).size(), 10U);
}

TEST(PairExchange, TakesTheLongerSide) { EXPECT_EQ(exchange_seconds(1.0, 3.0), 3.0); }

PairMatrix symmetric(int n, double value) {
  PairMatrix m(n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j) m.bw(i, j) = value * (1.0 + 0.03 * ((i * 7 + j * 3) % 5));  // +-12% noise
  return m;
}

void set_pair(PairMatrix& m, int a, int b, double v) {
  m.bw(a, b) = v;
  m.bw(b, a) = v;
}

const std::vector<std::string> hosts{"a", "b", "c", "d", "e", "f"};

TEST(Findings, NothingOnAHealthyNoisyCluster) {
  EXPECT_TRUE(find_outliers(symmetric(6, 10.0), hosts, {}).empty());
  PairMatrix wide = symmetric(4, 10.0);
  set_pair(wide, 0, 1, 25.0);  // a fast pair is not a finding
  set_pair(wide, 2, 3, 6.0);   // 60% of the median: noise, not a fault
  EXPECT_TRUE(find_outliers(wide, hosts, {}).empty());
}

TEST(Findings, SlowNodeIsToldApartFromItsLinks) {
  PairMatrix m = symmetric(6, 10.0);
  for (int j = 0; j < 6; ++j)
    if (j != 4) set_pair(m, 4, j, 0.5);
  const auto f = find_outliers(m, hosts, {});
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].kind, FindingKind::slow_node);
  EXPECT_EQ(f[0].hosts, std::vector<std::string>{"e"});
  EXPECT_NEAR(f[0].value_gbs, 0.5, 1e-12);
  EXPECT_NE(f[0].message.find("slow node e"), std::string::npos);
}

TEST(Findings, SlowNodeAmongFourWhereHalfTheLinksAreSlow) {
  // With four nodes a slow node touches 3 of 6 links: the link median alone
  // would be fooled, the node medians are not.
  PairMatrix m = symmetric(4, 1.0);
  for (const int j : {0, 1, 3}) set_pair(m, 2, j, 0.012);
  const auto f = find_outliers(m, hosts, {});
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].kind, FindingKind::slow_node);
  EXPECT_EQ(f[0].nodes, std::vector<int>{2});
}

TEST(Findings, SlowLinkNamesBothEnds) {
  PairMatrix m = symmetric(4, 0.3);
  set_pair(m, 0, 3, 0.008);
  const auto f = find_outliers(m, hosts, {});
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].kind, FindingKind::slow_link);
  EXPECT_EQ(f[0].nodes, (std::vector<int>{0, 3}));
  EXPECT_EQ(f[0].hosts, (std::vector<std::string>{"a", "d"}));
  EXPECT_NE(f[0].message.find("slow link a <-> d"), std::string::npos);
}

TEST(Findings, OneSlowLinkAndANoisyOneDoNotMakeASlowNode) {
  // node0: one throttled link and one that noise halved (seen on a shared
  // 2-core machine); its other link is normal. That is a slow link.
  PairMatrix m(4);
  set_pair(m, 0, 1, 0.22);
  set_pair(m, 0, 2, 0.50);
  set_pair(m, 0, 3, 0.01);
  set_pair(m, 1, 2, 0.51);
  set_pair(m, 1, 3, 0.55);
  set_pair(m, 2, 3, 0.48);
  for (const Finding& f : find_outliers(m, hosts, {})) EXPECT_EQ(f.kind, FindingKind::slow_link);
  // Only what is far below the median: the throttled link alone.
  const auto f = find_outliers(m, hosts, OutlierThresholds{4.0, 0.8});
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].kind, FindingKind::slow_link);
  EXPECT_EQ(f[0].nodes, (std::vector<int>{0, 3}));
}

TEST(Findings, SlowLinkInAWidelySpreadCluster) {
  // Links spread by 3x (as on shared test machines) still show a 30x outlier.
  PairMatrix m(4);
  set_pair(m, 0, 1, 0.212);
  set_pair(m, 0, 2, 0.255);
  set_pair(m, 0, 3, 0.008);
  set_pair(m, 1, 2, 0.598);
  set_pair(m, 1, 3, 0.227);
  set_pair(m, 2, 3, 0.319);
  const auto f = find_outliers(m, hosts, {});
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].nodes, (std::vector<int>{0, 3}));
}

TEST(Findings, ThresholdsAreConfigurable) {
  PairMatrix m = symmetric(4, 10.0);
  set_pair(m, 1, 2, 6.0);
  EXPECT_TRUE(find_outliers(m, hosts, {}).empty());
  const auto strict = find_outliers(m, hosts, OutlierThresholds{2.0, 0.3});
  ASSERT_EQ(strict.size(), 1U);
  EXPECT_EQ(strict[0].nodes, (std::vector<int>{1, 2}));
}

TEST(Findings, UnmeasuredPairsAreNotZero) {
  PairMatrix m = symmetric(4, 10.0);
  m.bw(0, 1).reset();
  m.bw(1, 0).reset();
  EXPECT_TRUE(find_outliers(m, hosts, {}).empty());
}

TEST(Outlier, BothConditionsMustHold) {
  const RobustCenter tight = robust_center({10.0, 10.0, 10.0, 10.0, 9.99});
  EXPECT_FALSE(is_outlier(9.0, tight, {}));  // many MADs below, but only 10% down
  const RobustCenter wide = robust_center({1.0, 10.0, 100.0, 5.0, 50.0});
  EXPECT_FALSE(is_outlier(2.0, wide, {}));  // 80% down, but within the spread
  EXPECT_TRUE(is_outlier(1e-5, wide, {}));
}

// The full matrix's findings replace the health pass's only when it ran whole.
TEST(Findings, TheFullMatrixStandsOnlyWhenItRanWhole) {
  PairsResult full;
  full.hosts = {hosts.begin(), hosts.end()};
  full.nodes = symmetric(6, 10.0);
  for (int j = 0; j < 6; ++j)
    if (j != 4) set_pair(full.nodes, 4, j, 0.5);
  full.rounds_planned = 5;
  full.rounds = {0, 1, 2, 3, 4};
  HealthResult health;
  Finding earlier;
  earlier.message = "from the health pass";
  health.findings = {earlier};

  const auto names_e = [](const std::vector<Finding>& f) { return f.size() == 1 && f[0].hosts[0] == "e"; };
  EXPECT_TRUE(names_e(standing_findings(full, false, health, {})));
  EXPECT_TRUE(names_e(standing_findings(full, false, std::nullopt, {})));
  // Cut by the budget, or fewer rounds than planned: the health pass's stand.
  EXPECT_EQ(standing_findings(full, true, health, {})[0].message, "from the health pass");
  full.rounds = {0, 1};
  EXPECT_EQ(standing_findings(full, false, health, {})[0].message, "from the health pass");
  // Without a health pass the matrix is all there is.
  EXPECT_TRUE(names_e(standing_findings(full, true, std::nullopt, {})));
}

}  // namespace
}  // namespace fabricbench
