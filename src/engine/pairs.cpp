#include "fabricbench/engine/pairs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>

#include <fmt/format.h>

#include "fabricbench/core/stats.hpp"

namespace fabricbench {
int pair_round_count(int count) {
  if (count < 2) return 0;
  return count % 2 == 0 ? count - 1 : count;
}

std::vector<int> partners(int count, int round) {
  // The circle method: with an even number of seats (a ghost seat added for
  // odd counts), seat `last` stays put and the others rotate.
  std::vector<int> partner(static_cast<std::size_t>(std::max(count, 0)), -1);
  if (count < 2) return partner;
  const int seats = count % 2 == 0 ? count : count + 1;
  const int last = seats - 1;
  const int ring = seats - 1;
  const auto pair = [&](int a, int b) {
    if (a < count && b < count) {
      partner[static_cast<std::size_t>(a)] = b;
      partner[static_cast<std::size_t>(b)] = a;
    }
  };
  pair(round % ring, last);
  for (int i = 1; i < seats / 2; ++i) pair((round + i) % ring, (round - i + ring) % ring);
  return partner;
}

std::vector<int> partners(int count, int round, const std::vector<int>& order) {
  const std::vector<int> by_seat = partners(count, round);
  std::vector<int> partner(by_seat.size(), -1);
  for (std::size_t seat = 0; seat < by_seat.size(); ++seat) {
    if (by_seat[seat] < 0) continue;
    partner[static_cast<std::size_t>(order[seat])] = order[static_cast<std::size_t>(by_seat[seat])];
  }
  return partner;
}

std::vector<int> seat_order(int count, unsigned seed) {
  std::vector<int> order(static_cast<std::size_t>(std::max(count, 0)));
  for (int i = 0; i < count; ++i) order[static_cast<std::size_t>(i)] = i;
  if (seed == 0) return order;
  std::mt19937 draw(seed);
  for (std::size_t i = order.size(); i > 1; --i) {
    // A draw below a multiple of i, so every position is equally likely.
    const std::uint64_t range = std::uint64_t{std::mt19937::max()} + 1;
    const std::uint64_t limit = range - range % i;
    std::uint64_t value = 0;
    do {
      value = draw();
    } while (value >= limit);
    std::swap(order[i - 1], order[value % i]);
  }
  return order;
}

PairCost full_pair_cost(int count) {
  if (count < 2) return {};
  return {pair_round_count(count), static_cast<long long>(count) * (count - 1) / 2};
}

PairCost random_pair_cost(int count, int peers) {
  if (count < 2) return {};
  const int rounds = std::min(std::max(peers, 1), pair_round_count(count));
  return {rounds, static_cast<long long>(rounds) * (count / 2)};
}

std::vector<int> pair_rounds(int count, int sample) {
  std::vector<int> rounds;
  const int all = pair_round_count(count);
  if (sample <= 0 || sample >= all) {
    for (int r = 0; r < all; ++r) rounds.push_back(r);
    return rounds;
  }
  std::set<int> chosen;
  for (int i = 0; i < sample; ++i) chosen.insert(static_cast<int>(static_cast<long long>(i) * all / sample));
  return {chosen.begin(), chosen.end()};
}

double exchange_seconds(double a_seconds, double b_seconds) { return std::max(a_seconds, b_seconds); }

}  // namespace fabricbench
