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

// The halvings the bisection measures, `count` of them, no cut twice: first
// the cuts the fabric suggests, then random ones (plan_halvings' draws, a
// repeat skipped). Suggested: the latency islands apart (`island_of`, each
// node's island, when it holds two or more: the nodes in island order, the
// first half against the second), then the first half of the nodes in node
// (host-name) order against the second, since racks and leaf switches are
// usually contiguous in host names. Three random halvings can miss the one
// cut a shared uplink makes; these two do not when the islands or the names
// follow the racks.
std::vector<Halving> plan_bisection(int nodes, int count, std::uint64_t seed, const std::vector<int>& island_of = {});

// Pairs of a halving that are also measured alone: each is one more
// exchange (and one more communicator split) in sequence, so on a large
// cluster the reference is a sample, not every pair.
inline constexpr int bisection_alone_pairs = 8;

}  // namespace fabricbench
