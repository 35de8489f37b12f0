#pragma once
// The node-pair matrix and bad-node finding. Nodes are paired off in rounds
// (a round-robin tournament: N-1 rounds for even N, N for odd, one node idle
// in each); in every round all pairs exchange at once, each local rank with
// its counterpart, so all rails and the whole fabric are loaded, and every
// pair of nodes meets exactly once. Pairs rather than the shifted rings
// "node i sends to i+k" because a ring couples its links: a ring cannot go
// faster than its slowest link, so one slow link would slow every link of its
// ring, while a pair's exchange depends on that pair alone. Within a node the
// same rounds run over local ranks.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fabricbench {

// The rounds of the tournament for `count` members: how many there are, and
// each member's partner in one round (-1: idle).
int pair_round_count(int count);
std::vector<int> partners(int count, int round);

// The same tournament with members seated in `order` (order[seat] = member):
// the first K rounds of a tournament in a random order meet each member with
// K random others, none twice.
std::vector<int> partners(int count, int round, const std::vector<int>& order);

// A random order of `count` members from `seed`: a Fisher-Yates shuffle on
// std::mt19937, whose output the standard fixes, so every rank (and every
// build) draws the same order. Seed 0: the identity.
std::vector<int> seat_order(int count, unsigned seed);

// What the pair matrix costs for `count` nodes: `rounds` rounds (all pairs
// of a round at once) and `exchanges` node pairs, each moving the message
// both ways on every rail.
struct PairCost {
  int rounds = 0;
  long long exchanges = 0;
};
PairCost full_pair_cost(int count);
PairCost random_pair_cost(int count, int peers);

// The rounds to run: all, or `sample` of them spread evenly (sample <= 0:
// all). Every node still meets `sample` others.
std::vector<int> pair_rounds(int count, int sample);

// An exchange is over when both ends are done: the pair's time is the longer
// of the two ranks' times.
double exchange_seconds(double a_seconds, double b_seconds);

// A matrix over members (nodes, or local ranks) with "not measured" distinct
// from zero.
struct PairMatrix {
  int size = 0;
  std::vector<std::optional<double>> bandwidth_gbs;  // [from * size + to]
  std::vector<std::optional<double>> latency_us;
  explicit PairMatrix(int n = 0)
      : size(n),
        bandwidth_gbs(static_cast<std::size_t>(n) * static_cast<std::size_t>(n)),
        latency_us(static_cast<std::size_t>(n) * static_cast<std::size_t>(n)) {}
  std::optional<double>& bw(int from, int to) {
    return bandwidth_gbs[static_cast<std::size_t>(from) * static_cast<std::size_t>(size) +
                         static_cast<std::size_t>(to)];
  }
  const std::optional<double>& bw(int from, int to) const {
    return bandwidth_gbs[static_cast<std::size_t>(from) * static_cast<std::size_t>(size) +
                         static_cast<std::size_t>(to)];
  }
  std::optional<double>& lat(int from, int to) {
    return latency_us[static_cast<std::size_t>(from) * static_cast<std::size_t>(size) + static_cast<std::size_t>(to)];
  }
  const std::optional<double>& lat(int from, int to) const {
    return latency_us[static_cast<std::size_t>(from) * static_cast<std::size_t>(size) + static_cast<std::size_t>(to)];
  }
};

struct PairsResult {
  std::size_t bytes = 0;        // large message: bandwidth
  std::size_t small_bytes = 0;  // small message: latency
  std::string mode = "full";    // "full": the tournament in node order; "random": a few rounds in a seeded order
  unsigned seed = 0;            // random: the order's seed
  int rounds_planned = 0;       // before the budget cut any
  std::vector<int> rounds;      // the rounds that ran
  int ranks_per_node = 0;
  std::vector<std::string> hosts;
  PairMatrix nodes;               // node <-> node (symmetric), summed over rails
  std::vector<PairMatrix> intra;  // per node: local rank <-> local rank
  std::uint64_t wrong = 0;        // wrong elements over all rounds
};

// When a bandwidth is an outlier: below (1 - drop) x the median, and more than
// `mads` scaled MADs below the median on a log scale (bandwidth noise is
// multiplicative: a link at half speed is as far off as one at double).
// Both must hold, so a tight cluster (tiny MAD) does not flag noise and a
// wide one does not hide a slow member.
struct OutlierThresholds {
  double mads = 4.0;
  double drop = 0.5;
};

// The centre and spread the outlier test compares with.
struct RobustCenter {
  double median = 0;      // of the values
  double log_median = 0;  // of their logarithms
  double log_mad = 0;     // median absolute deviation of the logarithms
};
RobustCenter robust_center(const std::vector<double>& values);

enum class FindingKind { slow_node, slow_link };

struct Finding {
  FindingKind kind = FindingKind::slow_node;
  std::vector<int> nodes;  // the node, or the link's two ends (from, to)
  std::vector<std::string> hosts;
  double value_gbs = 0;      // the node's median link, or the link's bandwidth
  double reference_gbs = 0;  // the median it is compared with
  std::string message;
};

// Slow nodes first: a node whose upper-quartile link bandwidth is an outlier
// among the nodes' (all, or nearly all, its links slow). Then slow links among the links
// that touch no slow node.
std::vector<Finding> find_outliers(const PairMatrix& matrix, const std::vector<std::string>& hosts,
                                   const OutlierThresholds& thresholds);

bool is_outlier(double value, const RobustCenter& center, const OutlierThresholds& thresholds);

std::string_view name(FindingKind kind);

}  // namespace fabricbench
