#pragma once
// Placement records: latency islands found in the pair matrix, and the
// bisection halvings with what each measured.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fabricbench/core/field_list.hpp"
#include "fabricbench/records/pairs.hpp"

namespace fabricbench {

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

// One random halving: nodes shuffled with a seeded generator (the same on
// every rank), the first half paired with the second, position by position;
// with an odd count the last node sits out.
struct Halving {
  std::vector<int> half_a;
  std::vector<int> half_b;  // half_b[i] exchanges with half_a[i]
  // Why this cut: "islands" (the latency islands apart), "node order" (the
  // first half of the nodes against the second: racks are usually
  // contiguous in host-name order) or "random".
  std::string source = "random";
};

// A halving's cut, whichever half is called a: both halves sorted, the one
// with the lowest node first (with an odd count, the node sitting out is the
// one in neither).
inline std::pair<std::vector<int>, std::vector<int>> cut_of(std::vector<int> a, std::vector<int> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (b < a) std::swap(a, b);
  return {std::move(a), std::move(b)};
}

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

struct HalvingResult {
  std::vector<int> half_a;
  std::vector<int> half_b;
  std::string source;  // as Halving's; empty in files from before it
  std::vector<BisectionPair> pairs;
  double isolated_gbs = 0;                 // sum over the pairs measured alone
  double loaded_gbs = 0;                   // sum over the same pairs under load
  std::optional<double> oversubscription;  // isolated / loaded
};

struct BisectionResult {
  std::size_t bytes = 0;
  std::uint64_t seed = 0;
  int ranks_per_node = 0;
  std::optional<int> nodes;  // how many the halvings split (absent from older files)
  std::vector<HalvingResult> halvings;
  // How much of the cut space the halvings sampled: the different halvings
  // measured, how many the nodes have, and the share.
  std::optional<int> distinct_halvings;
  std::optional<double> halvings_possible;
  std::optional<double> coverage;
  std::optional<double> oversubscription;  // the worst halving's
  double limit = 0;                        // above this the fabric is named blocking
  bool blocking = false;
  std::string message;
  std::uint64_t wrong = 0;
};

// ---- field lists (core/field_list.hpp) ------------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, LatencyIsland>
void fields_of(Self& i, Field&& field) {
  field("name", i.name);
  field("nodes", i.nodes);
  field("hosts", i.hosts);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, IslandsResult>
void fields_of(Self& r, Field&& field) {
  field("islands", r.islands);
  field("in_island_latency_us", r.in_island_latency_us);
  field("cross_island_latency_us", r.cross_island_latency_us);
  field("ratio", r.ratio);
  field("min_ratio", r.min_ratio);
  field("message", r.message);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, BisectionPair>
void fields_of(Self& p, Field&& field) {
  field("a", p.a);
  field("b", p.b);
  field("host_a", p.host_a);
  field("host_b", p.host_b);
  field("isolated_gbs", p.isolated_gbs);
  field("loaded_gbs", p.loaded_gbs);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, HalvingResult>
void fields_of(Self& h, Field&& field) {
  field("half_a", h.half_a);
  field("half_b", h.half_b);
  field("source", fields::omitted(h.source));
  field("pairs", h.pairs);
  field("isolated_gbs", h.isolated_gbs);
  field("loaded_gbs", h.loaded_gbs);
  field("oversubscription", h.oversubscription);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, BisectionResult>
void fields_of(Self& b, Field&& field) {
  field("bytes", b.bytes);
  field("seed", b.seed);
  field("ranks_per_node", b.ranks_per_node);
  field("nodes", b.nodes);
  field("halvings", b.halvings);
  field("distinct_halvings", b.distinct_halvings);
  field("halvings_possible", b.halvings_possible);
  field("coverage", b.coverage);
  field("oversubscription", b.oversubscription);
  field("limit", b.limit);
  field("blocking", b.blocking);
  field("message", b.message);
  field("wrong", b.wrong);
}

}  // namespace fabricbench
