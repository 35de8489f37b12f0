#include "fabricbench/analysis/pairs.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

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

double safe_log(double v) { return std::log(std::max(v, 1e-12)); }

// A pair's latency: the mean of the directions that were measured.
std::optional<double> pair_latency(const PairMatrix& m, int a, int b) {
  const std::optional<double>& ab = m.lat(a, b);
  const std::optional<double>& ba = m.lat(b, a);
  if (ab && ba) return (*ab + *ba) / 2;
  return ab ? ab : ba;
}

struct Link {
  int a = 0;
  int b = 0;
  double us = 0;
};

int find_root(std::vector<int>& parent, int x) {
  while (parent[static_cast<std::size_t>(x)] != x) {
    parent[static_cast<std::size_t>(x)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
    x = parent[static_cast<std::size_t>(x)];
  }
  return x;
}

std::string island_name(std::size_t index) {
  std::string name;
  std::size_t i = index;
  do {
    name.insert(name.begin(), static_cast<char>('A' + i % 26));
    i = i / 26;
  } while (i-- > 0);
  return name;
}

// "node0, node1, node2 and 5 more"
std::string host_list(const std::vector<std::string>& hosts) {
  constexpr std::size_t shown = 4;
  std::string text;
  for (std::size_t i = 0; i < hosts.size() && i < shown; ++i) text += (i == 0 ? "" : ", ") + hosts[i];
  if (hosts.size() > shown) text += fmt::format(" and {} more", hosts.size() - shown);
  return text;
}

IslandsResult one_island(int nodes, const std::vector<std::string>& hosts, double min_ratio, const std::string& why) {
  IslandsResult r;
  r.min_ratio = min_ratio;
  LatencyIsland all;
  all.name = island_name(0);
  for (int n = 0; n < nodes; ++n) {
    all.nodes.push_back(n);
    all.hosts.push_back(static_cast<std::size_t>(n) < hosts.size() ? hosts[static_cast<std::size_t>(n)] : "");
  }
  r.islands.push_back(std::move(all));
  r.message = "one latency island: " + why;
  return r;
}

// The islands that joining every pair at or below links[cut] makes, judged.
struct Split {
  std::vector<int> root;  // each node's island, as a representative node
  double in_us = 0;
  double cross_us = 0;
  double ratio = 0;
  std::string flaw;  // why it is not a split; empty when it is one
};

Split split_at(const std::vector<Link>& links, std::size_t cut, int n, const std::vector<std::string>& hosts) {
  Split s;
  std::vector<int> parent(static_cast<std::size_t>(n));
  std::iota(parent.begin(), parent.end(), 0);
  for (std::size_t i = 0; i <= cut; ++i)
    parent[static_cast<std::size_t>(find_root(parent, links[i].a))] = find_root(parent, links[i].b);
  s.root.resize(static_cast<std::size_t>(n));
  for (int node = 0; node < n; ++node) s.root[static_cast<std::size_t>(node)] = find_root(parent, node);

  std::vector<double> within;
  std::vector<double> across;
  for (const Link& l : links)
    (s.root[static_cast<std::size_t>(l.a)] == s.root[static_cast<std::size_t>(l.b)] ? within : across).push_back(l.us);
  if (across.empty()) {
    s.flaw = fmt::format("the fabric is flat (the slower pairs still chain every node together; largest step {:.2f}x)",
                         links[cut + 1].us / links[cut].us);
    return s;
  }
  // An island is a group: one node far from every other is a slow node (or
  // a busy one), not a rack of its own, and says nothing about placement.
  std::vector<int> members(static_cast<std::size_t>(n), 0);
  for (const int root : s.root) ++members[static_cast<std::size_t>(root)];
  for (int node = 0; node < n; ++node)
    if (members[static_cast<std::size_t>(s.root[static_cast<std::size_t>(node)])] == 1) {
      s.flaw = fmt::format(
          "no group stands apart ({} is far from every other node, a slow node rather than an island)",
          static_cast<std::size_t>(node) < hosts.size() ? hosts[static_cast<std::size_t>(node)] : std::to_string(node));
      return s;
    }
  s.in_us = median(within);
  s.cross_us = median(across);
  s.ratio = s.cross_us / s.in_us;
  return s;
}

// How many of the largest steps are tried as cuts: a handful covers a
// fabric's real levels (rack, row, hall); trying each is one pass over the
// links.
constexpr std::size_t cuts_tried = 8;

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

IslandsResult find_latency_islands(const PairMatrix& matrix, const std::vector<std::string>& hosts, double min_ratio) {
  const int n = matrix.size;
  std::vector<Link> links;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      if (const auto us = pair_latency(matrix, a, b); us && *us > 0) links.push_back({a, b, *us});
  if (n < 3 || links.size() < 2) return one_island(n, hosts, min_ratio, "too few nodes or measured pairs to split");
  std::sort(links.begin(), links.end(), [](const Link& x, const Link& y) { return x.us < y.us; });

  // Candidate cuts: the largest steps between neighbouring pair latencies,
  // largest first. The largest alone is not enough: one busy pair inside an
  // island (a preempted rank, a noisy neighbour) can make the largest step
  // fall inside the island, leaving a node alone; the island's real edge is
  // then the next step.
  std::vector<std::size_t> cuts(links.size() - 1);
  std::iota(cuts.begin(), cuts.end(), std::size_t{0});
  const auto step_at = [&](std::size_t i) { return links[i + 1].us / links[i].us; };
  const std::size_t tried = std::min(cuts.size(), cuts_tried);
  std::partial_sort(
      cuts.begin(), cuts.begin() + static_cast<std::ptrdiff_t>(tried), cuts.end(),
      [&](std::size_t x, std::size_t y) { return step_at(x) > step_at(y) || (step_at(x) == step_at(y) && x < y); });
  if (step_at(cuts.front()) < min_ratio)
    return one_island(n, hosts, min_ratio,
                      fmt::format("the fabric is flat (the largest step between pair latencies is {:.2f}x, below "
                                  "--island-ratio {:g})",
                                  step_at(cuts.front()), min_ratio));

  // The largest step whose split stands: every island two nodes or more,
  // and the median across islands at least min_ratio times the median
  // within. Where none does, the largest step says why.
  std::optional<Split> best;
  Split first;
  for (std::size_t k = 0; k < tried && step_at(cuts[k]) > 1 && !best; ++k) {
    Split s = split_at(links, cuts[k], n, hosts);
    if (k == 0) first = s;
    if (s.flaw.empty() && s.ratio >= min_ratio) best = std::move(s);
  }
  if (!best) {
    if (!first.flaw.empty()) return one_island(n, hosts, min_ratio, first.flaw);
    return one_island(n, hosts, min_ratio,
                      fmt::format("the fabric is flat (across a candidate split the latency is only {:.2f}x that "
                                  "within, below --island-ratio {:g})",
                                  first.ratio, min_ratio));
  }

  // Islands in order of their lowest node; nodes ascending within each.
  IslandsResult r;
  r.min_ratio = min_ratio;
  std::vector<int> island_of_root(static_cast<std::size_t>(n), -1);
  for (int node = 0; node < n; ++node) {
    int& index = island_of_root[static_cast<std::size_t>(best->root[static_cast<std::size_t>(node)])];
    if (index < 0) {
      index = static_cast<int>(r.islands.size());
      r.islands.push_back({island_name(r.islands.size()), {}, {}});
    }
    LatencyIsland& island = r.islands[static_cast<std::size_t>(index)];
    island.nodes.push_back(node);
    island.hosts.push_back(static_cast<std::size_t>(node) < hosts.size() ? hosts[static_cast<std::size_t>(node)] : "");
  }
  r.in_island_latency_us = best->in_us;
  r.cross_island_latency_us = best->cross_us;
  r.ratio = best->ratio;
  std::string names;
  for (std::size_t i = 0; i < r.islands.size(); ++i) {
    if (i == 4) {
      names += fmt::format("; and {} more", r.islands.size() - i);
      break;
    }
    names += fmt::format("{}{} ({})", i == 0 ? "" : "; ", r.islands[i].name, host_list(r.islands[i].hosts));
  }
  r.message = fmt::format(
      "{} latency islands: {}; across islands {:.1f}x the latency within ({:.1f} us against "
      "{:.1f} us)",
      r.islands.size(), names, best->ratio, best->cross_us, best->in_us);
  return r;
}

namespace {

// The different halvings of `nodes` nodes: C(n, n/2) ways to choose one
// half, each cut counted once (the two halves swapped are the same cut);
// with an odd n, one node sits out, any of n. Infinite beyond what a double
// holds (some 1,030 nodes).
double halvings_of(int nodes) {
  if (nodes < 2) return 0;
  const bool odd = nodes % 2 != 0;
  const double n = odd ? nodes - 1 : nodes;
  double log_count = std::lgamma(n + 1) - 2 * std::lgamma(n / 2 + 1) - std::log(2.0);
  if (odd) log_count += std::log(static_cast<double>(nodes));
  return std::round(std::exp(log_count));
}

// One halving's cut, whichever half is called a: the two halves sorted, the
// one with the lowest node first (with an odd count, the node sitting out
// is the one in neither).
std::pair<std::vector<int>, std::vector<int>> cut_of(const HalvingResult& h) {
  std::vector<int> a = h.half_a;
  std::vector<int> b = h.half_b;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (b < a) std::swap(a, b);
  return {a, b};
}

// "; 3 of 35 possible halvings measured (9%): ...", what the halvings left
// unseen and how to see it.
std::string coverage_text(const BisectionResult& b) {
  if (!b.distinct_halvings || !b.coverage) return "";
  const int measured = *b.distinct_halvings;
  if (*b.coverage >= 1) return fmt::format("; all {} possible halving{} measured", measured, measured == 1 ? "" : "s");
  const std::string possible =
      b.halvings_possible ? fmt::format("{:.0f}", *b.halvings_possible) : std::string("more than 1e308");
  const std::string share =
      *b.coverage >= 0.01 ? fmt::format("{:.0f}%", 100 * *b.coverage) : fmt::format("{:.2g}%", 100 * *b.coverage);
  const std::string fix = b.halvings_possible && *b.halvings_possible <= 1000
                              ? fmt::format("--bisection-halvings {} measures every one", possible)
                              : std::string("more --bisection-halvings (up to 1000) sample more of them");
  return fmt::format("; {} of {} possible halvings measured ({}): a cut outside them goes unseen, {}", measured,
                     possible, share, fix);
}

}  // namespace

void analyze_bisection(BisectionResult& result, double limit) {
  result.limit = limit;
  result.distinct_halvings.reset();
  result.halvings_possible.reset();
  result.coverage.reset();
  if (!result.halvings.empty()) {
    std::set<std::pair<std::vector<int>, std::vector<int>>> cuts;
    for (const HalvingResult& h : result.halvings) cuts.insert(cut_of(h));
    const HalvingResult& first = result.halvings.front();
    const int nodes = result.nodes.value_or(static_cast<int>(first.half_a.size() + first.half_b.size()));
    const double possible = halvings_of(nodes);
    result.distinct_halvings = static_cast<int>(cuts.size());
    if (std::isfinite(possible)) result.halvings_possible = possible;
    if (possible > 0) result.coverage = std::min(1.0, static_cast<double>(cuts.size()) / possible);
  }
  result.oversubscription.reset();
  int worst = -1;
  for (std::size_t k = 0; k < result.halvings.size(); ++k) {
    HalvingResult& h = result.halvings[k];
    h.isolated_gbs = 0;
    h.loaded_gbs = 0;
    for (const BisectionPair& p : h.pairs) {
      if (!p.isolated_gbs) continue;
      h.isolated_gbs += *p.isolated_gbs;
      h.loaded_gbs += p.loaded_gbs;
    }
    h.oversubscription.reset();
    if (h.loaded_gbs > 0 && h.isolated_gbs > 0) h.oversubscription = h.isolated_gbs / h.loaded_gbs;
    if (h.oversubscription && (!result.oversubscription || *h.oversubscription > *result.oversubscription)) {
      result.oversubscription = h.oversubscription;
      worst = static_cast<int>(k);
    }
  }
  result.blocking = result.oversubscription && *result.oversubscription > limit;
  if (!result.oversubscription) {
    result.message = "nothing measured (needs 2 or more nodes)";
    return;
  }
  const double o = *result.oversubscription;
  const HalvingResult& w = result.halvings[static_cast<std::size_t>(worst)];
  if (result.blocking)
    result.message = fmt::format(
        "the fabric is {:.2f}:1 oversubscribed, not non-blocking: with half the nodes sending to the "
        "other half, the pairs of halving {} moved {:.2f} GB/s together against {:.2f} GB/s alone (limit {:g}:1){}",
        o, worst + 1, w.loaded_gbs, w.isolated_gbs, limit, coverage_text(result));
  else
    result.message = fmt::format(
        "non-blocking within {:g}:1 (worst of {} halving{} {:.2f}:1: {:.2f} GB/s together against "
        "{:.2f} GB/s alone){}",
        limit, result.halvings.size(), result.halvings.size() == 1 ? "" : "s", o, w.loaded_gbs, w.isolated_gbs,
        coverage_text(result));
}

std::vector<Finding> standing_findings(const PairsResult& matrix, bool cut, const std::optional<HealthResult>& health,
                                       const OutlierThresholds& thresholds) {
  const bool whole = static_cast<int>(matrix.rounds.size()) == matrix.rounds_planned && !cut;
  if (whole || !health) return find_outliers(matrix.nodes, matrix.hosts, thresholds);
  return health->findings;
}

}  // namespace fabricbench
