#include "fabricbench/engine/pairs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>

#include <fmt/format.h>

#include "fabricbench/core/stats.hpp"

namespace fabricbench {
namespace {

double mad_of(const std::vector<double>& values, double center) {
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (const double v : values) deviations.push_back(std::fabs(v - center));
  return median(deviations);
}

}  // namespace

std::string_view name(FindingKind kind) { return kind == FindingKind::slow_node ? "slow_node" : "slow_link"; }

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

namespace {
double safe_log(double v) { return std::log(std::max(v, 1e-12)); }
}  // namespace

RobustCenter robust_center(const std::vector<double>& values) {
  RobustCenter c;
  if (values.empty()) return c;
  c.median = median(values);
  std::vector<double> logs;
  logs.reserve(values.size());
  for (const double v : values) logs.push_back(safe_log(v));
  c.log_median = median(logs);
  c.log_mad = mad_of(logs, c.log_median);
  return c;
}

bool is_outlier(double value, const RobustCenter& c, const OutlierThresholds& t) {
  // 1.4826 scales the MAD to a standard deviation for normal noise.
  return value < c.median * (1.0 - t.drop) && safe_log(value) < c.log_median - t.mads * 1.4826 * c.log_mad;
}

std::vector<Finding> find_outliers(const PairMatrix& m, const std::vector<std::string>& hosts,
                                   const OutlierThresholds& thresholds) {
  std::vector<Finding> findings;
  const int n = m.size;
  const auto host = [&hosts](int i) {
    return i < static_cast<int>(hosts.size()) ? hosts[static_cast<std::size_t>(i)] : fmt::format("node {}", i);
  };

  // A pair's bandwidth; the matrix may hold one direction or both.
  const auto link = [&m](int i, int j) -> std::optional<double> {
    if (m.bw(i, j) && m.bw(j, i)) return std::min(*m.bw(i, j), *m.bw(j, i));
    return m.bw(i, j) ? m.bw(i, j) : m.bw(j, i);
  };
  // A node's score is its upper-quartile link: a node is slow when (nearly)
  // all its links are, while one slow link barely moves it. A median would
  // not do: with four nodes a node has three links, and one slow link plus a
  // noisy one already pull its median down.
  std::vector<double> node_score(static_cast<std::size_t>(n), 0.0);
  std::vector<int> measured_nodes;
  for (int i = 0; i < n; ++i) {
    std::vector<double> links;
    for (int j = 0; j < n; ++j)
      if (i != j && link(i, j)) links.push_back(*link(i, j));
    if (links.empty()) continue;
    node_score[static_cast<std::size_t>(i)] = percentile(links, 0.75);
    measured_nodes.push_back(i);
  }
  std::set<int> slow_nodes;
  // Three nodes cannot tell a slow node from two slow links; four can.
  if (measured_nodes.size() >= 4) {
    std::vector<double> scores;
    for (const int i : measured_nodes) scores.push_back(node_score[static_cast<std::size_t>(i)]);
    const RobustCenter center = robust_center(scores);
    const double med = center.median;
    for (const int i : measured_nodes) {
      const double v = node_score[static_cast<std::size_t>(i)];
      if (!is_outlier(v, center, thresholds)) continue;
      slow_nodes.insert(i);
      Finding f;
      f.kind = FindingKind::slow_node;
      f.nodes = {i};
      f.hosts = {host(i)};
      f.value_gbs = v;
      f.reference_gbs = med;
      f.message = fmt::format(
          "slow node {}: its links run at {:.3f} GB/s (upper quartile), {:.0f}% of the {:.3f} GB/s of "
          "the nodes' median",
          host(i), v, 100.0 * v / med, med);
      findings.push_back(f);
    }
  }

  // Links that touch no slow node.
  std::vector<double> values;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (link(i, j) && !slow_nodes.contains(i) && !slow_nodes.contains(j)) values.push_back(*link(i, j));
  if (values.size() < 3) return findings;
  const RobustCenter center = robust_center(values);
  const double med = center.median;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      if (slow_nodes.contains(i) || slow_nodes.contains(j)) continue;
      const std::optional<double> v = link(i, j);
      if (!v || !is_outlier(*v, center, thresholds)) continue;
      Finding f;
      f.kind = FindingKind::slow_link;
      f.nodes = {i, j};
      f.hosts = {host(i), host(j)};
      f.value_gbs = *v;
      f.reference_gbs = med;
      f.message = fmt::format("slow link {} <-> {}: {:.3f} GB/s, {:.0f}% of the {:.3f} GB/s median link", host(i),
                              host(j), *v, 100.0 * *v / med, med);
      findings.push_back(f);
    }
  }
  return findings;
}

}  // namespace fabricbench
