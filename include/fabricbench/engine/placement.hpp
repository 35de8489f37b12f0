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
#include "fabricbench/records/placement.hpp"

namespace fabricbench {

// ---- latency islands ------------------------------------------------------

// ---- bisection ------------------------------------------------------------

// `count` halvings of `nodes` nodes from `seed`: the same on every machine
// (a generator defined bit for bit, and a shuffle written here, not a
// library's).
std::vector<Halving> plan_halvings(int nodes, int count, std::uint64_t seed);

// Pairs of a halving that are also measured alone: each is one more
// exchange (and one more communicator split) in sequence, so on a large
// cluster the reference is a sample, not every pair.
inline constexpr int bisection_alone_pairs = 8;

}  // namespace fabricbench
