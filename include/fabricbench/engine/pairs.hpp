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
#include "fabricbench/records/pairs.hpp"

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

}  // namespace fabricbench
