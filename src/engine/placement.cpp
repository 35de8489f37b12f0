#include "fabricbench/engine/placement.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "fabricbench/core/stats.hpp"

namespace fabricbench {
namespace {

// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014): defined bit for bit, so every rank and every
// build draws the same halvings from the same seed.
std::uint64_t next_random(std::uint64_t& state) {
  state += 0x9e3779b97f4a7c15ULL;
  std::uint64_t z = state;
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}

}  // namespace

std::vector<Halving> plan_halvings(int nodes, int count, std::uint64_t seed) {
  std::vector<Halving> out;
  if (nodes < 2) return out;
  std::uint64_t state = seed;
  std::vector<int> order(static_cast<std::size_t>(nodes));
  for (int k = 0; k < count; ++k) {
    std::iota(order.begin(), order.end(), 0);
    // Fisher-Yates, written out: std::shuffle's draws differ between libraries.
    for (std::size_t i = order.size() - 1; i > 0; --i)
      std::swap(order[i], order[static_cast<std::size_t>(next_random(state) % (i + 1))]);
    const std::size_t half = order.size() / 2;
    Halving h;
    h.half_a.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(half));
    h.half_b.assign(order.begin() + static_cast<std::ptrdiff_t>(half),
                    order.begin() + static_cast<std::ptrdiff_t>(2 * half));
    out.push_back(std::move(h));
  }
  return out;
}

namespace {

// The first half of `order` against the second (with an odd count the last
// sits out).
Halving halves_of(const std::vector<int>& order, std::string source) {
  const std::size_t half = order.size() / 2;
  Halving h;
  h.half_a.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(half));
  h.half_b.assign(order.begin() + static_cast<std::ptrdiff_t>(half),
                  order.begin() + static_cast<std::ptrdiff_t>(2 * half));
  h.source = std::move(source);
  return h;
}

}  // namespace

std::vector<Halving> plan_bisection(int nodes, int count, std::uint64_t seed, const std::vector<int>& island_of) {
  std::vector<Halving> out;
  if (nodes < 2 || count <= 0) return out;
  std::set<std::pair<std::vector<int>, std::vector<int>>> seen;
  const auto add = [&](Halving h) {
    if (static_cast<int>(out.size()) < count && seen.insert(cut_of(h.half_a, h.half_b)).second)
      out.push_back(std::move(h));
  };
  std::vector<int> order(static_cast<std::size_t>(nodes));
  std::iota(order.begin(), order.end(), 0);
  if (island_of.size() == order.size() && std::set<int>(island_of.begin(), island_of.end()).size() >= 2) {
    std::vector<int> by_island = order;
    std::stable_sort(by_island.begin(), by_island.end(), [&island_of](int x, int y) {
      return island_of[static_cast<std::size_t>(x)] < island_of[static_cast<std::size_t>(y)];
    });
    add(halves_of(by_island, "islands"));
  }
  add(halves_of(order, "node order"));
  // Random cuts, a repeat skipped: a bounded number of draws, so a small
  // fabric whose every cut is measured stops there.
  for (Halving& h : plan_halvings(nodes, 16 * count + 16, seed)) {
    if (static_cast<int>(out.size()) >= count) break;
    add(std::move(h));
  }
  return out;
}

}  // namespace fabricbench
