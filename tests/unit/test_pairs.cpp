#include "fabricbench/analysis/pairs.hpp"
#include "fabricbench/engine/pairs.hpp"

#include <algorithm>
#include <set>
#include <tuple>
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
  PairMatrix wide = symmetric(6, 10.0);
  set_pair(wide, 0, 1, 25.0);  // a fast pair is not a finding
  set_pair(wide, 2, 3, 6.0);   // 60% of the median: noise, not a fault
  EXPECT_TRUE(find_outliers(wide, hosts, {}).empty());
  // (With 4 nodes, two at 25 between them and 10 to the others are what
  // two slow nodes of 4 look like: up to half the nodes may be slow, so the
  // faster half is the healthy one.)
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
  // At the default drop both are below half the median: slow with 2 of its
  // 3 partners, node0 is the first pass's suspect. Measured again apart,
  // the halved link is fast: the slow link alone is confirmed, no node.
  const std::vector<Finding> first = find_outliers(m, hosts, {});
  ASSERT_EQ(first.size(), 1U);
  EXPECT_EQ(first[0].kind, FindingKind::slow_node);
  EXPECT_NE(first[0].message.find("slow node a (slow with 2 of its 3 partners)"), std::string::npos)
      << first[0].message;
  PairMatrix second = symmetric(4, 0.5);
  set_pair(second, 0, 3, 0.01);
  const Confirmation c = confirm_suspects(first, NodePairs{second, {}}, hosts, {});
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_EQ(c.findings[0].kind, FindingKind::slow_link);
  EXPECT_EQ(c.findings[0].nodes, (std::vector<int>{0, 3}));
  EXPECT_TRUE(c.unconfirmed.empty());
  // Only what is far below the median: the throttled link alone.
  const auto f = find_outliers(m, hosts, OutlierThresholds{4.0, 0.8});
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].kind, FindingKind::slow_link);
  EXPECT_EQ(f[0].nodes, (std::vector<int>{0, 3}));
}

// A host losing packets: each of its links runs at another fraction of the
// others' (seen at 5% loss: 16%, 18%, 23%), so its own figure (its better
// links) stays above a fifth while two of its links fall below. Slow with
// most of its partners, it is the node, not two links.
TEST(Findings, ANodeSlowWithMostOfItsPartnersIsTheNodeNotItsLinks) {
  PairMatrix m = symmetric(4, 0.8);
  set_pair(m, 2, 0, 0.23);
  set_pair(m, 2, 1, 0.14);
  set_pair(m, 2, 3, 0.12);
  const OutlierThresholds fifth{4.0, 0.8};
  const std::vector<Finding> f = find_outliers(m, hosts, fifth);
  ASSERT_EQ(f.size(), 1U) << f[0].message;
  EXPECT_EQ(f[0].kind, FindingKind::slow_node);
  EXPECT_EQ(f[0].nodes, std::vector<int>{2});
  // Its figure is its median link, against the healthy nodes'.
  EXPECT_DOUBLE_EQ(f[0].value_gbs, 0.14);
  EXPECT_NE(f[0].message.find("slow node c (slow with 2 of its 3 partners): its links run at 0.140 GB/s"),
            std::string::npos)
      << f[0].message;
  // Slow with one partner only: that link.
  set_pair(m, 2, 1, 0.5);
  const std::vector<Finding> link = find_outliers(m, hosts, fifth);
  ASSERT_EQ(link.size(), 1U);
  EXPECT_EQ(link[0].kind, FindingKind::slow_link);
  EXPECT_EQ(link[0].nodes, (std::vector<int>{2, 3}));
}

// Two such hosts among four: each is slow with all three partners (the
// link between them too), and the healthy nodes, each slow with two of
// three, are not named once the slow ones took their links.
TEST(Findings, TwoNodesSlowWithMostPartnersLeaveTheHealthyOnesUnnamed) {
  PairMatrix m = symmetric(4, 0.8);
  for (const int b : {0, 1}) {
    set_pair(m, 2, b, 0.12);
    set_pair(m, 3, b, 0.13);
  }
  set_pair(m, 2, 3, 0.1);
  std::vector<Finding> f = find_outliers(m, hosts, OutlierThresholds{4.0, 0.8});
  std::sort(f.begin(), f.end(), [](const Finding& x, const Finding& y) { return x.nodes < y.nodes; });
  ASSERT_EQ(f.size(), 2U);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(f[i].kind, FindingKind::slow_node) << f[i].message;
    EXPECT_EQ(f[i].nodes, std::vector<int>{static_cast<int>(i) + 2});
  }
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
  const RobustCenter wide = robust_center({1.0, 10.0, 100.0, 5.0, 50.0, 20.0});
  EXPECT_FALSE(is_outlier(2.0, wide, {}));  // 87% down, but within the spread
  EXPECT_TRUE(is_outlier(1e-5, wide, {}));
  // Five values have no spread to speak of: the drop alone decides.
  const RobustCenter few = robust_center({1.0, 10.0, 100.0, 5.0, 50.0});
  EXPECT_EQ(few.log_mad, 0.0);
  EXPECT_TRUE(is_outlier(2.0, few, {}));
}

// Three nodes: the node whose two links are slow while the third is not.
TEST(Findings, ThreeNodesNameTheNodeWhoseTwoLinksAreSlow) {
  PairMatrix m = symmetric(3, 1.0);
  set_pair(m, 2, 0, 0.018);
  set_pair(m, 2, 1, 0.019);
  const auto f = find_outliers(m, hosts, OutlierThresholds{4.0, 0.8});
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].kind, FindingKind::slow_node);
  EXPECT_EQ(f[0].nodes, std::vector<int>{2});
  EXPECT_NEAR(f[0].reference_gbs, m.bw(0, 1).value(), 0.2);
  // One slow link of three: the link.
  PairMatrix l = symmetric(3, 1.0);
  set_pair(l, 0, 1, 0.01);
  const auto g = find_outliers(l, hosts, {});
  ASSERT_EQ(g.size(), 1U);
  EXPECT_EQ(g[0].kind, FindingKind::slow_link);
  EXPECT_EQ(g[0].nodes, (std::vector<int>{0, 1}));
}

TEST(Findings, TwoNodesCannotTellANodeFromALink) {
  PairMatrix m(2);
  set_pair(m, 0, 1, 0.001);
  m.lat(0, 1) = 1e6;
  EXPECT_TRUE(find_outliers(m, hosts, {}).empty());
}

// Up to half the nodes slow, of different severity.
TEST(Findings, TwoSlowNodesOfDifferentSeverityAmongFourAndThreeAmongSix) {
  PairMatrix m = symmetric(4, 1.0);
  for (const int j : {0, 1, 3}) set_pair(m, 2, j, 0.018);  // 150 Mbit/s
  for (const int j : {0, 1}) set_pair(m, 3, j, 0.06);      // 500 Mbit/s; 2-3 stays at the slower
  auto f = find_outliers(m, hosts, OutlierThresholds{4.0, 0.8});
  ASSERT_EQ(f.size(), 2U);
  EXPECT_EQ(f[0].nodes, std::vector<int>{2});
  EXPECT_EQ(f[1].nodes, std::vector<int>{3});
  EXPECT_EQ(f[1].kind, FindingKind::slow_node);

  PairMatrix six = symmetric(6, 1.0);
  for (const int slow : {1, 3, 5})
    for (int j = 0; j < 6; ++j)
      if (j != slow && (j % 2 == 0 || j < slow)) set_pair(six, slow, j, 0.02 * slow);
  f = find_outliers(six, hosts, {});
  ASSERT_EQ(f.size(), 3U);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(f[k].kind, FindingKind::slow_node);
    EXPECT_EQ(f[k].nodes, std::vector<int>{static_cast<int>(2 * k + 1)});
  }
}

// The test bed's figures from a run that named neither: node 1 slow (all its
// links), link 0-3 slow, and the two healthy links 2x apart. Judged with
// itself in the sample, the slow link widened the spread it was judged by.
TEST(Findings, ASlowNodeAndASlowLinkBesideTwoHealthyLinksTwiceApart) {
  PairMatrix m(4);
  for (const int j : {0, 2, 3}) set_pair(m, 1, j, 0.0105);
  set_pair(m, 0, 3, 0.0106);
  set_pair(m, 0, 2, 1.707);
  set_pair(m, 2, 3, 0.816);
  const auto f = find_outliers(m, hosts, {4.0, 0.8});
  ASSERT_EQ(f.size(), 2U);
  EXPECT_EQ(f[0].kind, FindingKind::slow_node);
  EXPECT_EQ(f[0].nodes, std::vector<int>{1});
  EXPECT_EQ(f[1].kind, FindingKind::slow_link);
  EXPECT_EQ(f[1].nodes, (std::vector<int>{0, 3}));
  // Judged against the two others: their median.
  EXPECT_NEAR(f[1].reference_gbs, (1.707 + 0.816) / 2, 1e-9);
  // The healthy links stay healthy, each judged against the other and the slow one.
  for (const Finding& x : f) EXPECT_NE(x.nodes, (std::vector<int>{2, 3}));
  // A loaded machine's run that ended OK: one healthy link at a fourth of
  // the other spread three links so wide that nothing was an outlier.
  set_pair(m, 0, 2, 0.189);
  set_pair(m, 2, 3, 0.761);
  const auto g = find_outliers(m, hosts, {4.0, 0.8});
  ASSERT_EQ(g.size(), 2U);
  EXPECT_EQ(g[0].nodes, std::vector<int>{1});
  EXPECT_EQ(g[1].nodes, (std::vector<int>{0, 3}));
}

// A lossy host: its bandwidth passes, its small messages wait.
TEST(Findings, LatencyNamesWhatBandwidthDoesNot) {
  PairMatrix m = symmetric(4, 1.0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      if (i != j) m.lat(i, j) = 100.0 * (1.0 + 0.1 * ((i + j) % 3));  // up to 1.2x apart
  for (const int j : {0, 1, 2}) {
    m.lat(3, j) = 420.0;
    m.lat(j, 3) = 380.0;  // the fastest direction counts
  }
  const auto f = find_outliers(m, hosts, {});
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].kind, FindingKind::slow_node);
  EXPECT_EQ(f[0].metric, FindingMetric::latency);
  EXPECT_EQ(f[0].nodes, std::vector<int>{3});
  EXPECT_NEAR(f[0].value_us.value(), 380.0, 1e-9);
  EXPECT_NE(f[0].message.find("us"), std::string::npos);
  // Contention's spread (2x between pairs) is not a finding.
  PairMatrix noisy = symmetric(4, 1.0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      if (i != j) noisy.lat(i, j) = 100.0 * (1.0 + 0.5 * ((i * 3 + j) % 3));
  EXPECT_TRUE(find_outliers(noisy, hosts, {}).empty());
}

// A node whose every exchange was cut is a suspect, never absent.
TEST(Findings, ANodeWithNoFigureIsASuspect) {
  PairMatrix m = symmetric(4, 1.0);
  for (int j = 0; j < 4; ++j) {
    m.bw(1, j).reset();
    m.bw(j, 1).reset();
  }
  const auto f = find_outliers(m, hosts, {});
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].metric, FindingMetric::no_figure);
  EXPECT_EQ(f[0].nodes, std::vector<int>{1});
  EXPECT_GT(f[0].reference_gbs, 0.9);
  EXPECT_NE(f[0].message.find("no figure for b"), std::string::npos);
}

// What the first pass suspects: a node at a fiftieth of `ref`, or the link
// between nodes a and b at a fiftieth of 1 GB/s.
Finding suspect_node(int n, double ref) {
  Finding f;
  f.nodes = {n};
  f.hosts = {hosts[static_cast<std::size_t>(n)]};
  f.value_gbs = ref / 50;
  f.reference_gbs = ref;
  f.message = "slow node";
  return f;
}

Finding suspect_link(int a, int b) {
  Finding f = suspect_node(a, 1.0);
  f.kind = FindingKind::slow_link;
  f.nodes = {a, b};
  f.hosts.push_back(hosts[static_cast<std::size_t>(b)]);
  f.message = "slow link";
  return f;
}

TEST(Confirmation, PairsEachSuspectWithHealthyNodesInRounds) {
  const Finding node = suspect_node(2, 1.0);
  const Finding link = suspect_link(0, 5);
  const auto pairs = confirmation_pairs({node, link}, 6);
  // Node 2 with three healthy nodes (1, 3, 4), link 0-5 again and each end with one.
  std::set<std::pair<int, int>> want{{0, 5}, {1, 2}, {2, 3}, {2, 4}, {0, 1}, {3, 5}};
  const std::set<std::pair<int, int>> got(pairs.begin(), pairs.end());
  EXPECT_EQ(got, want);
  const auto rounds = pack_rounds(pairs, 6);
  std::set<std::pair<int, int>> met;
  for (const std::vector<int>& r : rounds)
    for (int a = 0; a < 6; ++a) {
      const int b = r[static_cast<std::size_t>(a)];
      if (b < 0) continue;
      EXPECT_EQ(r[static_cast<std::size_t>(b)], a);
      if (a < b) {
        EXPECT_TRUE(met.insert({a, b}).second);
      }
    }
  EXPECT_EQ(met, want);
  // No healthy node left: only a suspect link is measured again.
  EXPECT_TRUE(confirmation_pairs({suspect_node(0, 1.0)}, 1).empty());
  EXPECT_EQ(confirmation_pairs({suspect_link(0, 1)}, 2), (std::vector<std::pair<int, int>>{{0, 1}}));
}

// One slow node and one slow link among four touch every node: the slow
// node is measured again with the ends of the suspect link (never across a
// suspect link, never with a suspect node), not left with no partner.
TEST(Confirmation, TheEndsOfASuspectLinkArePartnersWhenNoOtherNodeIsLeft) {
  const auto pairs = confirmation_pairs({suspect_node(1, 1.0), suspect_link(0, 3), suspect_link(2, 3)}, 4);
  const std::set<std::pair<int, int>> got(pairs.begin(), pairs.end());
  // Node 1 with 0, 2 and 3; each link again; end 0 with node 2 (and end 2
  // with node 0), never node 3 with 0 or 2 across the other suspect link.
  const std::set<std::pair<int, int>> want{{0, 1}, {1, 2}, {1, 3}, {0, 3}, {2, 3}, {0, 2}};
  EXPECT_EQ(got, want);
}

// The pairs of `rounds`, lowest node first, each with its round's rail;
// every round a pairing (each node's partner names it back).
std::set<std::tuple<int, int, int>> paired_on(const std::vector<PairRound>& rounds, int nodes) {
  std::set<std::tuple<int, int, int>> met;
  for (const PairRound& r : rounds) {
    EXPECT_EQ(r.partners.size(), static_cast<std::size_t>(nodes));
    for (int a = 0; a < nodes; ++a) {
      const int b = r.partners[static_cast<std::size_t>(a)];
      if (b < 0) continue;
      EXPECT_EQ(r.partners[static_cast<std::size_t>(b)], a);
      if (a < b) {
        EXPECT_TRUE(met.insert({a, b, r.rail}).second);
      }
    }
  }
  return met;
}

// A rail's suspects are measured again on that rail alone, after the
// rounds of every rail at once; partners are chosen over every suspect (a
// node suspected on any rail is no healthy partner on another).
TEST(Confirmation, ARailsSuspectsAreMeasuredOnThatRailAloneAfterTheOthers) {
  Finding rail_link = suspect_link(0, 3);
  rail_link.rail = 0;
  Finding nic = suspect_node(4, 1.0);
  nic.kind = FindingKind::slow_nic;
  nic.rail = 1;
  const Finding node = suspect_node(2, 1.0);
  const std::vector<PairRound> rounds = confirmation_rounds({rail_link, nic, node}, 6);
  ASSERT_FALSE(rounds.empty());
  // Every rail at once first, then rail 0, then rail 1.
  for (std::size_t k = 1; k < rounds.size(); ++k) EXPECT_LE(rounds[k - 1].rail, rounds[k].rail);
  EXPECT_EQ(rounds.front().rail, -1);
  // Node 2 with the healthy nodes 1 and 5, then the ends of the link; never
  // node 4.
  const std::set<std::tuple<int, int, int>> want{
      {1, 2, -1}, {2, 5, -1}, {0, 2, -1},  // the node, every rail at once
      {0, 3, 0},  {0, 1, 0},  {3, 5, 0},   // the link on rail 0 and each end
      {1, 4, 1},  {4, 5, 1},  {0, 4, 1},   // the NIC on rail 1
  };
  EXPECT_EQ(paired_on(rounds, 6), want);
  // With no rail's suspect, the rounds are pack_rounds' of confirmation_pairs', on every rail.
  const std::vector<PairRound> plain = confirmation_rounds({node}, 6);
  const std::vector<std::vector<int>> packed = pack_rounds(confirmation_pairs({node}, 6), 6);
  ASSERT_EQ(plain.size(), packed.size());
  for (std::size_t k = 0; k < plain.size(); ++k) EXPECT_EQ(plain[k], (PairRound{packed[k], -1}));
}

TEST(Confirmation, ConfirmsASlowNodeAndClearsANoisyOne) {
  PairMatrix second(4);
  for (const int j : {0, 1}) set_pair(second, 3, j, 0.02);  // node 3 slow again with both
  set_pair(second, 2, 0, 0.9);                              // node 2 healthy again
  set_pair(second, 2, 1, 1.1);
  const Confirmation c =
      confirm_suspects({suspect_node(3, 1.0), suspect_node(2, 1.0)}, NodePairs{second, {}}, hosts, {});
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_EQ(c.findings[0].nodes, std::vector<int>{3});
  EXPECT_TRUE(c.findings[0].confirmed.value());
  EXPECT_EQ(c.findings[0].checks.size(), 2U);
  EXPECT_NE(c.findings[0].message.find("confirmed: slow again with a (0.020 GB/s), b (0.020 GB/s)"), std::string::npos)
      << c.findings[0].message;
  ASSERT_EQ(c.unconfirmed.size(), 1U);
  EXPECT_FALSE(c.unconfirmed[0].confirmed.value());
  EXPECT_EQ(c.unconfirmed[0].message.rfind("not confirmed: ", 0), 0U);
}

TEST(Confirmation, SlowWithOnePartnerOfSeveralIsThatLink) {
  PairMatrix second(5);
  set_pair(second, 4, 0, 0.01);
  set_pair(second, 4, 1, 1.0);
  set_pair(second, 4, 2, 0.95);
  const Confirmation c = confirm_suspects({suspect_node(4, 1.0)}, NodePairs{second, {}}, hosts, {});
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_EQ(c.findings[0].kind, FindingKind::slow_link);
  EXPECT_EQ(c.findings[0].nodes, (std::vector<int>{0, 4}));
  EXPECT_EQ(c.findings[0].hosts, (std::vector<std::string>{"a", "e"}));
  EXPECT_TRUE(c.findings[0].confirmed.value());
  EXPECT_TRUE(c.unconfirmed.empty());
  // It reads as a link confirmed on its own: the link's figures first, in
  // the link's order (not the suspect node's), then node 4's other partners.
  const std::vector<Recheck>& checks = c.findings[0].checks;
  ASSERT_EQ(checks.size(), 3U);
  EXPECT_EQ(checks[0].nodes, (std::vector<int>{0, 4}));
  EXPECT_EQ(checks[0].hosts, (std::vector<std::string>{"a", "e"}));
  EXPECT_TRUE(checks[0].slow);
  for (std::size_t i = 1; i < checks.size(); ++i) {
    EXPECT_EQ(checks[i].nodes[0], 4);
    EXPECT_FALSE(checks[i].slow);
  }
  EXPECT_NE(c.findings[0].message.find("slow link a <-> e: "), std::string::npos) << c.findings[0].message;
  EXPECT_NE(c.findings[0].message.find("confirmed: slow again when measured apart (0.010 GB/s"), std::string::npos)
      << c.findings[0].message;
  EXPECT_NE(c.findings[0].message.find("e was fast again with b (1.000 GB/s"), std::string::npos)
      << c.findings[0].message;
}

// A node the run has already confirmed slow (the health pass's) is no
// healthy partner for a later suspect: re-paired with it, a healthy node
// measured slow with it and became a "slow link" to the slow node.
TEST(Confirmation, ANodeConfirmedBeforeIsNoPartnerAndItsFiguresDoNotCount) {
  const Finding known = suspect_node(2, 1.0);
  const auto pairs = confirmation_pairs({suspect_node(0, 1.0)}, 4, {known});
  EXPECT_EQ(pairs, (std::vector<std::pair<int, int>>{{0, 1}, {0, 3}}));
  PairMatrix second(4);
  set_pair(second, 0, 1, 0.95);
  set_pair(second, 0, 2, 0.01);  // measured with the slow node after all
  set_pair(second, 0, 3, 1.05);
  const Confirmation c = confirm_suspects({suspect_node(0, 1.0)}, NodePairs{second, {}}, hosts, {}, {known});
  EXPECT_TRUE(c.findings.empty());
  ASSERT_EQ(c.unconfirmed.size(), 1U);
  EXPECT_EQ(c.unconfirmed[0].checks.size(), 2U);
  // Without it, the slow node's link would name node 0's.
  const Confirmation blind = confirm_suspects({suspect_node(0, 1.0)}, NodePairs{second, {}}, hosts, {});
  ASSERT_EQ(blind.findings.size(), 1U);
  EXPECT_EQ(blind.findings[0].kind, FindingKind::slow_link);
}

TEST(Confirmation, ALinkIsConfirmedWhenSlowAgainAndANodeWithoutPartnersIsNot) {
  const Finding link = suspect_link(0, 1);
  PairMatrix second(4);
  set_pair(second, 0, 1, 0.01);
  set_pair(second, 0, 2, 1.0);
  set_pair(second, 1, 3, 1.0);
  Confirmation c = confirm_suspects({link}, NodePairs{second, {}}, hosts, {});
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_EQ(c.findings[0].checks.size(), 3U);
  EXPECT_TRUE(c.findings[0].checks[0].slow);
  set_pair(second, 0, 1, 0.9);
  c = confirm_suspects({link}, NodePairs{second, {}}, hosts, {});
  EXPECT_TRUE(c.findings.empty());
  ASSERT_EQ(c.unconfirmed.size(), 1U);
  // Nothing measured: not confirmed, and the message says why.
  c = confirm_suspects({suspect_node(1, 1.0)}, NodePairs{PairMatrix(2), {}}, hosts, {});
  ASSERT_EQ(c.unconfirmed.size(), 1U);
  EXPECT_NE(c.unconfirmed[0].message.find("no healthy node was left"), std::string::npos);
}

// Slow again against the first pass's reference is not enough where the
// whole second pass is slower (a machine that got busier): a link is
// confirmed only below (1 - drop) x its ends' figures with other partners
// in the same pass, and a node slow with one partner only when that link is
// below (1 - drop) x its figures with the others.
TEST(Confirmation, ASlowerSecondPassAccusesNoLinkThatIsNoSlowerThanItsNeighbours) {
  const Finding link = suspect_link(0, 1);
  PairMatrix second(4);
  set_pair(second, 0, 1, 0.048);  // under a fifth of the 1 GB/s reference
  set_pair(second, 0, 2, 0.071);
  set_pair(second, 1, 3, 0.09);
  Confirmation c = confirm_suspects({link}, NodePairs{second, {}}, hosts, {});
  EXPECT_TRUE(c.findings.empty());
  ASSERT_EQ(c.unconfirmed.size(), 1U);
  EXPECT_FALSE(c.unconfirmed[0].confirmed.value());
  EXPECT_NE(c.unconfirmed[0].message.find("measured again at 0.048 GB/s, no slower than its ends with other partners "
                                          "(a <-> c (0.071 GB/s), b <-> d (0.090 GB/s))"),
            std::string::npos)
      << c.unconfirmed[0].message;
  // Below half its ends' median (0.081 GB/s): confirmed.
  set_pair(second, 0, 1, 0.03);
  c = confirm_suspects({link}, NodePairs{second, {}}, hosts, {});
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_TRUE(c.findings[0].confirmed.value());

  // Node 4 slow with a (0.048) and "fast" with b (0.071): no link stands out.
  PairMatrix five(5);
  set_pair(five, 4, 0, 0.048);
  set_pair(five, 4, 1, 0.071);
  const Finding nic = suspect_node(4, 0.12);  // slow below 0.06 GB/s
  c = confirm_suspects({nic}, NodePairs{five, {}}, hosts, {});
  EXPECT_TRUE(c.findings.empty());
  ASSERT_EQ(c.unconfirmed.size(), 1U);
  EXPECT_NE(c.unconfirmed[0].message.find(
                "measured again slow with a (0.048 GB/s) only, and no slower than with b (0.071 GB/s)"),
            std::string::npos)
      << c.unconfirmed[0].message;
  // A tenth of the other: that link.
  set_pair(five, 4, 0, 0.007);
  c = confirm_suspects({nic}, NodePairs{five, {}}, hosts, {});
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_EQ(c.findings[0].kind, FindingKind::slow_link);
  EXPECT_EQ(c.findings[0].nodes, (std::vector<int>{0, 4}));
}

TEST(Confirmation, ANodeIsNotJudgedAcrossASuspectLink) {
  const Finding node = suspect_node(1, 1.0);
  const Finding link = suspect_link(1, 2);
  PairMatrix second(4);
  set_pair(second, 1, 2, 0.01);  // the link slow again
  set_pair(second, 1, 0, 0.9);   // node 1 fast with the others
  set_pair(second, 1, 3, 1.0);
  const Confirmation c = confirm_suspects({node, link}, NodePairs{second, {}}, hosts, {});
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_EQ(c.findings[0].kind, FindingKind::slow_link);
  ASSERT_EQ(c.unconfirmed.size(), 1U);
  EXPECT_EQ(c.unconfirmed[0].kind, FindingKind::slow_node);
  for (const Recheck& r : c.unconfirmed[0].checks) EXPECT_NE(r.nodes[1], 2);
  EXPECT_EQ(c.unconfirmed[0].checks.size(), 2U);
}

TEST(Confirmation, AConfirmedFindingIsNotMeasuredAgain) {
  const Finding a = suspect_node(1, 1.0);
  Finding b = suspect_node(2, 1.0);
  const auto left = new_suspects({a, b}, {a});
  ASSERT_EQ(left.size(), 1U);
  EXPECT_EQ(left[0].nodes, std::vector<int>{2});
}

// Four nodes of `rails` rails, each rail's links near 1 GB/s; the nodes'
// matrix their sum.
NodePairs railed(int rails) {
  NodePairs p{PairMatrix(4), {}};
  for (int l = 0; l < rails; ++l) p.rails.push_back(symmetric(4, 1.0));
  return p;
}

void sum_rails(NodePairs& p) {
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) {
      if (a == b) continue;
      double sum = 0;
      for (const PairMatrix& rail : p.rails) sum += rail.bw(a, b).value_or(0.0);
      p.nodes.bw(a, b) = sum;
    }
}

// With 8 rails, one NIC at a tenth costs its node's sum 11%: no threshold
// on the nodes' matrix sees it; its rail's matrix does, and names that NIC,
// not the node.
TEST(RailFindings, OneSlowNicAmongEightRailsIsNamedAsThatRailsNic) {
  NodePairs p = railed(8);
  for (const int b : {0, 1, 3}) set_pair(p.rails[5], 2, b, 0.1);
  sum_rails(p);
  EXPECT_TRUE(find_outliers(p.nodes, hosts, {}).empty());
  const std::vector<Finding> f = find_suspects(p, hosts, {});
  ASSERT_EQ(f.size(), 1U) << f[0].message;
  EXPECT_EQ(f[0].kind, FindingKind::slow_nic);
  EXPECT_EQ(f[0].nodes, std::vector<int>{2});
  EXPECT_EQ(f[0].rail, 5);
  EXPECT_NE(f[0].message.find("slow NIC of c on rail 5"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("while its rails 0, 1, 2, 3, 4, 6, 7 are not slow"), std::string::npos) << f[0].message;
}

// Two rails, one NIC at a tenth: the node's sum falls to 55%, short of the
// drop; the NIC is named, and a node whose every rail is slow stays a node.
TEST(RailFindings, ANodeSlowOnEveryRailIsTheNodeAndOneRailIsItsNic) {
  NodePairs p = railed(2);
  for (const int b : {0, 1, 2}) set_pair(p.rails[1], 3, b, 0.1);
  for (const int b : {0, 2, 3})
    for (PairMatrix& rail : p.rails) set_pair(rail, 1, b, 0.05);
  sum_rails(p);
  std::vector<Finding> f = find_suspects(p, hosts, {});
  std::sort(f.begin(), f.end(), [](const Finding& x, const Finding& y) { return x.nodes < y.nodes; });
  ASSERT_EQ(f.size(), 2U);
  EXPECT_EQ(f[0].kind, FindingKind::slow_node);
  EXPECT_EQ(f[0].nodes, std::vector<int>{1});
  EXPECT_FALSE(f[0].rail);
  EXPECT_EQ(f[1].kind, FindingKind::slow_nic);
  EXPECT_EQ(f[1].nodes, std::vector<int>{3});
  EXPECT_EQ(f[1].rail, 1);
}

// A node slow on one of its two rails at a fiftieth: its sum is an outlier
// (46%), and still the NIC, not the node, is named.
TEST(RailFindings, ANicExplainsItsNodesSlowSum) {
  NodePairs p = railed(2);
  for (const int b : {1, 2, 3}) set_pair(p.rails[0], 0, b, 0.02);
  for (const int b : {1, 2, 3}) set_pair(p.rails[1], 0, b, 0.9);
  sum_rails(p);
  ASSERT_EQ(find_outliers(p.nodes, hosts, {}).size(), 1U);
  const std::vector<Finding> f = find_suspects(p, hosts, {});
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].kind, FindingKind::slow_nic);
  EXPECT_EQ(f[0].nodes, std::vector<int>{0});
  EXPECT_EQ(f[0].rail, 0);
  // Slow on both rails: the node.
  for (const int b : {1, 2, 3}) set_pair(p.rails[1], 0, b, 0.02);
  sum_rails(p);
  const std::vector<Finding> node = find_suspects(p, hosts, {});
  ASSERT_EQ(node.size(), 1U);
  EXPECT_EQ(node[0].kind, FindingKind::slow_node);
}

// A lossy host on two rails: on rail 0 it is slow with every partner, on
// rail 1 one of its links falls below the threshold and the others run at a
// quarter. That is not a NIC (its other rail is slow too) and not a rail's
// link: the node, as the nodes' matrix says.
TEST(RailFindings, ANodeSlowOnEveryRailAtDifferentDepthsIsNotANic) {
  NodePairs p = railed(2);
  for (const int b : {0, 1, 3}) set_pair(p.rails[0], 2, b, 0.1);
  set_pair(p.rails[1], 2, 0, 0.25);
  set_pair(p.rails[1], 2, 1, 0.15);
  set_pair(p.rails[1], 2, 3, 0.25);
  sum_rails(p);
  const OutlierThresholds fifth{4.0, 0.8};
  const std::vector<Finding> f = find_suspects(p, hosts, fifth);
  ASSERT_EQ(f.size(), 1U) << f[0].message;
  EXPECT_EQ(f[0].kind, FindingKind::slow_node);
  EXPECT_EQ(f[0].nodes, std::vector<int>{2});
  EXPECT_FALSE(f[0].rail);
}

// A link slow on one rail alone is that rail's link.
TEST(RailFindings, ALinkSlowOnOneRailIsThatRailsLink) {
  NodePairs p = railed(4);
  set_pair(p.rails[2], 0, 3, 0.05);
  sum_rails(p);
  const std::vector<Finding> f = find_suspects(p, hosts, {});
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].kind, FindingKind::slow_link);
  EXPECT_EQ(f[0].nodes, (std::vector<int>{0, 3}));
  EXPECT_EQ(f[0].rail, 2);
  EXPECT_NE(f[0].message.find("slow link a <-> d on rail 2"), std::string::npos) << f[0].message;
}

// A NIC suspect is judged by its rail's second pass: slow again there with
// two partners, it is confirmed, though the node's summed links are fine;
// fast there, it is not confirmed, though another rail is slow.
TEST(RailFindings, ANicIsConfirmedByItsRailsSecondPass) {
  NodePairs p = railed(2);
  for (const int b : {0, 1, 3}) set_pair(p.rails[1], 2, b, 0.1);
  sum_rails(p);
  const std::vector<Finding> suspects = find_suspects(p, hosts, {});
  ASSERT_EQ(suspects.size(), 1U);
  const auto pairs = confirmation_pairs(suspects, 4);
  EXPECT_EQ(pairs, (std::vector<std::pair<int, int>>{{0, 2}, {1, 2}, {2, 3}}));
  NodePairs second = railed(2);
  for (PairMatrix& rail : second.rails) rail = PairMatrix(4);
  for (const auto& [a, b] : pairs) {
    set_pair(second.rails[0], a, b, 1.0);
    set_pair(second.rails[1], a, b, 0.1);
  }
  sum_rails(second);
  Confirmation c = confirm_suspects(suspects, second, hosts, {});
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_EQ(c.findings[0].kind, FindingKind::slow_nic);
  EXPECT_EQ(c.findings[0].rail, 1);
  EXPECT_EQ(c.findings[0].checks.size(), 3U);
  for (const auto& [a, b] : pairs) {
    set_pair(second.rails[0], a, b, 0.1);
    set_pair(second.rails[1], a, b, 1.0);
  }
  c = confirm_suspects(suspects, second, hosts, {});
  EXPECT_TRUE(c.findings.empty());
  ASSERT_EQ(c.unconfirmed.size(), 1U);
  EXPECT_EQ(c.unconfirmed[0].message.rfind("not confirmed: slow NIC of c on rail 1", 0), 0U)
      << c.unconfirmed[0].message;
  // A rail the second pass did not keep: not confirmed, never on the node's figures.
  c = confirm_suspects(suspects, NodePairs{second.nodes, {}}, hosts, {});
  EXPECT_TRUE(c.findings.empty());
  ASSERT_EQ(c.unconfirmed.size(), 1U);
}

// Nodes [0, split) on one switch, the rest on another, joined by a slow
// uplink: fast within each group, at a fiftieth across.
PairMatrix behind_uplink(int n, int split) {
  PairMatrix m = symmetric(n, 1.0);
  for (int a = 0; a < split; ++a)
    for (int b = split; b < n; ++b) set_pair(m, a, b, 0.02);
  return m;
}

// Half the links slow and every node fast with its own group: no node or
// link stands out, the path between the groups does.
TEST(UplinkFindings, TwoGroupsFastWithinAndSlowAcrossAreASlowUplink) {
  const NodePairs p{behind_uplink(4, 2), {}};
  const std::vector<Finding> f = find_suspects(p, hosts, {});
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].kind, FindingKind::slow_uplink);
  EXPECT_EQ(f[0].nodes, (std::vector<int>{2, 3}));
  EXPECT_EQ(f[0].hosts, (std::vector<std::string>{"c", "d"}));
  EXPECT_NEAR(f[0].value_gbs, 0.02, 1e-9);
  EXPECT_NE(f[0].message.find("slow uplink between {a, b} and {c, d}: the 4 node pairs across"), std::string::npos)
      << f[0].message;
}

// Four against two: the two have one fast link each; the uplink is named,
// not they.
TEST(UplinkFindings, TheSmallerGroupIsNotNamedAsSlowNodes) {
  const NodePairs p{behind_uplink(6, 4), {}};
  const std::vector<Finding> f = find_suspects(p, hosts, {});
  ASSERT_EQ(f.size(), 1U) << f[0].message;
  EXPECT_EQ(f[0].kind, FindingKind::slow_uplink);
  EXPECT_EQ(f[0].nodes, (std::vector<int>{4, 5}));
}

// A slow node is a node, and a group of one is no group: no uplink.
TEST(UplinkFindings, ASlowNodeIsNoUplink) {
  PairMatrix m = symmetric(4, 1.0);
  for (const int b : {0, 1, 2}) set_pair(m, 3, b, 0.02);
  EXPECT_FALSE(find_slow_uplink(m, hosts, {}));
  const std::vector<Finding> f = find_suspects(NodePairs{m, {}}, hosts, {});
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].kind, FindingKind::slow_node);
  EXPECT_FALSE(find_slow_uplink(symmetric(6, 1.0), hosts, {}));
}

// Confirmed by pairs across measured again, each node in one; the other
// suspects then measure with their own side only.
TEST(UplinkFindings, AnUplinkIsConfirmedByPairsAcrossMeasuredAgain) {
  const std::vector<Finding> suspects = find_suspects(NodePairs{behind_uplink(6, 3), {}}, hosts, {});
  ASSERT_EQ(suspects.size(), 1U);
  const auto pairs = confirmation_pairs(suspects, 6);
  EXPECT_EQ(pairs, (std::vector<std::pair<int, int>>{{0, 3}, {1, 4}, {2, 5}}));
  PairMatrix second(6);
  for (const auto& [a, b] : pairs) set_pair(second, a, b, 0.02);
  Confirmation c = confirm_suspects(suspects, NodePairs{second, {}}, hosts, {});
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_EQ(c.findings[0].checks.size(), 3U);
  EXPECT_NE(c.findings[0].message.find("; confirmed: slow again across"), std::string::npos);
  for (const auto& [a, b] : pairs) set_pair(second, a, b, 0.9);
  c = confirm_suspects(suspects, NodePairs{second, {}}, hosts, {});
  EXPECT_TRUE(c.findings.empty());
  ASSERT_EQ(c.unconfirmed.size(), 1U);
  EXPECT_EQ(c.unconfirmed[0].message.rfind("not confirmed: slow uplink", 0), 0U);
  // A slow node behind the uplink is measured with its own side.
  Finding node = suspect_node(4, 1.0);
  const auto with_node = confirmation_pairs({suspects[0], node}, 6);
  for (const auto& [a, b] : with_node)
    if (a == 4 || b == 4) {
      EXPECT_TRUE((a >= 3) == (b >= 3)) << a << "-" << b;
    }
}

// An uplink with `behind` on the far side, at a fiftieth of 1 GB/s.
Finding suspect_uplink(const std::vector<int>& behind) {
  Finding f = suspect_node(behind.front(), 1.0);
  f.kind = FindingKind::slow_uplink;
  f.nodes = behind;
  f.message = "slow uplink";
  return f;
}

// Three switches, {a, b}, {c, d} and {e, f}: the run has confirmed the
// uplink of {e, f}, and the full matrix suspects the one of {c, d}. Only
// pairs across {c, d}'s, and across no other, confirm it: the known
// uplink's slow pairs once stood in for them.
TEST(UplinkFindings, AKnownUplinkIsNotTakenForASuspectOne) {
  const Finding known = suspect_uplink({4, 5});
  const Finding suspect = suspect_uplink({2, 3});
  const auto pairs = confirmation_pairs({suspect}, 6, {known});
  EXPECT_EQ(pairs, (std::vector<std::pair<int, int>>{{0, 2}, {1, 3}}));
  PairMatrix second = symmetric(6, 1.0);
  for (const int a : {0, 1, 2, 3})
    for (const int b : {4, 5}) set_pair(second, a, b, 0.02);
  Confirmation c = confirm_suspects({suspect}, NodePairs{second, {}}, hosts, {}, {known});
  EXPECT_TRUE(c.findings.empty());
  ASSERT_EQ(c.unconfirmed.size(), 1U);
  EXPECT_EQ(c.unconfirmed[0].checks.size(), 4U);  // {a, b} with {c, d}
  for (const Recheck& r : c.unconfirmed[0].checks) {
    EXPECT_FALSE(r.slow);
    EXPECT_LT(r.nodes[0], 2);
  }
  for (const int a : {0, 1})
    for (const int b : {2, 3}) set_pair(second, a, b, 0.02);
  c = confirm_suspects({suspect}, NodePairs{second, {}}, hosts, {}, {known});
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_EQ(c.findings[0].nodes, (std::vector<int>{2, 3}));
  // A suspect node measures with its own side of both.
  const auto with_node = confirmation_pairs({suspect, suspect_node(0, 1.0)}, 6, {known});
  for (const auto& [a, b] : with_node)
    if (a == 0) {
      EXPECT_EQ(b, 1);
    }
}

}  // namespace
}  // namespace fabricbench
