#pragma once
// Where nodes sit in the fabric, from what the pairs measured: latency
// islands (groups of nodes close to each other, such as the nodes of one
// rack) from the node-pair latency matrix, and a bisection test (half the
// nodes exchange with the other half at once) that gives the fabric's
// effective oversubscription. The arithmetic here is pure; running the
// bisection over a transport is in engine/multinode.hpp.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/engine/pairs.hpp"

namespace fabricbench {

// ---- latency islands ------------------------------------------------------

struct LatencyIsland {
  std::string name;  // "A", "B", ... in order of the lowest node index
  std::vector<int> nodes;
  std::vector<std::string> hosts;
};

struct IslandsResult {
  std::vector<LatencyIsland> islands;  // one island holding every node when the fabric is flat
  // Medians over the measured node pairs (a pair's latency is the mean of its
  // two directions): pairs inside one island, and pairs across islands.
  std::optional<double> in_island_latency_us;
  std::optional<double> cross_island_latency_us;
  std::optional<double> ratio;  // cross / in
  double min_ratio = 0;         // the step a split needs (--island-ratio)
  std::string message;
};

// Single-linkage clustering with a ratio criterion: the pair latencies are
// sorted, and the largest steps between neighbours (as ratios, since latency
// noise is multiplicative) are the candidate cuts; at a cut, nodes joined by
// a pair at or below it form an island. A split stands only when the largest
// step is at least `min_ratio`, every island holds two nodes or more (a node
// far from all others is a slow node, not a group) and the median across
// islands is at least `min_ratio` times the median within them; the largest
// step whose split stands is taken. Where none stands there is one island (a
// flat fabric), and the message says why from the largest step. Trying more
// than the largest step keeps one noisy pair inside an island (its step can
// be the largest) from hiding the islands; single linkage keeps one slow link
// from splitting anything: its two ends stay joined through their other,
// fast, pairs.
IslandsResult find_latency_islands(const PairMatrix& matrix, const std::vector<std::string>& hosts, double min_ratio);

// ---- bisection ------------------------------------------------------------

// One random halving: nodes shuffled with a seeded generator (the same on
// every rank), the first half paired with the second, position by position;
// with an odd count the last node sits out.
struct Halving {
  std::vector<int> half_a;
  std::vector<int> half_b;  // half_b[i] exchanges with half_a[i]
};
// `count` halvings of `nodes` nodes from `seed`: the same on every machine
// (a generator defined bit for bit, and a shuffle written here, not a
// library's).
std::vector<Halving> plan_halvings(int nodes, int count, std::uint64_t seed);

struct BisectionPair {
  int a = 0;
  int b = 0;
  std::string host_a;
  std::string host_b;
  // The pair exchanging alone (measured for the first bisection_alone_pairs
  // pairs of a halving; nullopt for the others).
  std::optional<double> isolated_gbs;
  double loaded_gbs = 0;  // the pair while every pair of its halving exchanges
};

// Pairs of a halving that are also measured alone: each is one more
// exchange (and one more communicator split) in sequence, so on a large
// cluster the reference is a sample, not every pair.
inline constexpr int bisection_alone_pairs = 8;

struct HalvingResult {
  std::vector<int> half_a;
  std::vector<int> half_b;
  std::vector<BisectionPair> pairs;
  double isolated_gbs = 0;                 // sum over the pairs measured alone
  double loaded_gbs = 0;                   // sum over the same pairs under load
  std::optional<double> oversubscription;  // isolated / loaded
};

struct BisectionResult {
  std::size_t bytes = 0;
  std::uint64_t seed = 0;
  int ranks_per_node = 0;
  std::vector<HalvingResult> halvings;
  std::optional<double> oversubscription;  // the worst halving's
  double limit = 0;                        // above this the fabric is named blocking
  bool blocking = false;
  std::string message;
  std::uint64_t wrong = 0;
};

// The sums, each halving's ratio, the worst, and the message: a non-blocking
// fabric carries every pair of a halving at its isolated speed (a ratio of
// 1); the fabric is named oversubscribed when the worst ratio exceeds
// `limit`.
void analyze_bisection(BisectionResult& result, double limit);

}  // namespace fabricbench
