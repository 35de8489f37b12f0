#include "fabricbench/analysis/pairs.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
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

struct SplitSearch {
  std::optional<Split> best;  // the largest step whose split stands
  Split first;                // the largest step's split
  double top_step = 0;        // the largest step, as a ratio
};

// Candidate cuts over `links` sorted by distance (latency, or time a byte):
// the largest steps between neighbours, largest first. The largest alone is
// not enough: one busy pair inside an island (a preempted rank, a noisy
// neighbour) can make the largest step fall inside the island, leaving a
// node alone; the island's real edge is then the next step. A split stands
// when every island holds two nodes or more and the median across islands
// is at least `min_ratio` times the median within.
SplitSearch search_split(const std::vector<Link>& links, int n, const std::vector<std::string>& hosts,
                         double min_ratio) {
  SplitSearch out;
  std::vector<std::size_t> cuts(links.size() - 1);
  std::iota(cuts.begin(), cuts.end(), std::size_t{0});
  const auto step_at = [&](std::size_t i) { return links[i + 1].us / links[i].us; };
  const std::size_t tried = std::min(cuts.size(), cuts_tried);
  std::partial_sort(
      cuts.begin(), cuts.begin() + static_cast<std::ptrdiff_t>(tried), cuts.end(),
      [&](std::size_t x, std::size_t y) { return step_at(x) > step_at(y) || (step_at(x) == step_at(y) && x < y); });
  out.top_step = step_at(cuts.front());
  if (out.top_step < min_ratio) return out;
  for (std::size_t k = 0; k < tried && step_at(cuts[k]) > 1 && !out.best; ++k) {
    Split s = split_at(links, cuts[k], n, hosts);
    if (k == 0) out.first = s;
    if (s.flaw.empty() && s.ratio >= min_ratio) out.best = std::move(s);
  }
  return out;
}

}  // namespace

RobustCenter robust_center(const std::vector<double>& values) {
  RobustCenter c;
  if (values.empty()) return c;
  c.median = median(values);
  std::vector<double> logs;
  logs.reserve(values.size());
  for (const double v : values) logs.push_back(safe_log(v));
  c.log_median = median(logs);
  if (values.size() >= spread_sample) c.log_mad = mad_of(logs, c.log_median);
  return c;
}

bool is_outlier(double value, const RobustCenter& c, const OutlierThresholds& t) {
  // 1.4826 scales the MAD to a standard deviation for normal noise.
  return value < c.median * (1.0 - t.drop) && safe_log(value) < c.log_median - t.mads * 1.4826 * c.log_mad;
}

namespace {

// A pair's figure as "higher is better": bandwidth as it is, latency as its
// inverse (so one outlier test serves both; a latency 3x the healthy one is
// a third of its speed). The matrix may hold one direction or both: the
// worse bandwidth, the better latency (contention only adds time).
using Figure = std::optional<double> (*)(const PairMatrix&, int, int);

std::optional<double> bandwidth_of(const PairMatrix& m, int i, int j) {
  if (m.bw(i, j) && m.bw(j, i)) return std::min(*m.bw(i, j), *m.bw(j, i));
  return m.bw(i, j) ? m.bw(i, j) : m.bw(j, i);
}

std::optional<double> speed_of(const PairMatrix& m, int i, int j) {
  std::optional<double> us;
  for (const std::optional<double>& v : {m.lat(i, j), m.lat(j, i)})
    if (v && *v > 0 && (!us || *v < *us)) us = v;
  if (!us) return std::nullopt;
  return 1.0 / *us;
}

// The upper median: the larger middle value of an even count, so that with
// half the values slow the reference is still a healthy one.
double upper_median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::string host_of(const std::vector<std::string>& hosts, int i) {
  return i < static_cast<int>(hosts.size()) ? hosts[static_cast<std::size_t>(i)] : fmt::format("node {}", i);
}

// A slow node at figure v against the healthy nodes' ref (both "higher is
// better"); `how` says why where its own figure does not (" (slow with 2 of
// its 3 partners)").
Finding node_finding(const std::vector<std::string>& hosts, int i, FindingMetric metric, double v, double ref,
                     const std::string& how) {
  Finding f;
  f.kind = FindingKind::slow_node;
  f.metric = metric;
  f.nodes = {i};
  f.hosts = {host_of(hosts, i)};
  if (metric == FindingMetric::latency) {
    f.value_us = 1.0 / v;
    f.reference_us = 1.0 / ref;
    f.message = fmt::format(
        "slow node {}{}: its exchanges of the small message take {:.1f} us, {:.1f}x the {:.1f} us of the healthy "
        "nodes",
        f.hosts[0], how, *f.value_us, *f.value_us / *f.reference_us, *f.reference_us);
  } else {
    f.value_gbs = v;
    f.reference_gbs = ref;
    f.message =
        fmt::format("slow node {}{}: its links run at {:.3f} GB/s, {:.0f}% of the {:.3f} GB/s of the healthy nodes",
                    f.hosts[0], how, v, 100.0 * v / ref, ref);
  }
  return f;
}

struct MetricFindings {
  std::vector<Finding> found;
  std::set<int> slow_nodes;
  std::optional<double> reference;  // the healthy nodes' figure
};

// A link's value judged against the other links' (leave one out): a slow
// link never widens the spread it is judged by. With three links, one of
// them slow, the other two are the reference; judged with itself in the
// sample, a link at 1% of two healthy ones that differ 2x sat on the edge of
// the spread and was named in some runs and not in others.
struct LinkValue {
  int a = 0;
  int b = 0;
  double value = 0;
};

std::optional<RobustCenter> outlier_center(const std::vector<LinkValue>& links, std::size_t k,
                                           const OutlierThresholds& t) {
  double top = 0;
  for (const LinkValue& l : links) top = std::max(top, l.value);
  // Below the best link by the drop at least, or no center can make it one.
  if (!(links[k].value < top * (1.0 - t.drop))) return std::nullopt;
  std::vector<double> others;
  others.reserve(links.size() - 1);
  for (std::size_t i = 0; i < links.size(); ++i)
    if (i != k) others.push_back(links[i].value);
  RobustCenter center = robust_center(others);
  if (!is_outlier(links[k].value, center, t)) return std::nullopt;
  return center;
}

// One metric's suspects (see find_outliers).
MetricFindings outliers_by(const PairMatrix& m, const std::vector<std::string>& hosts, const OutlierThresholds& t,
                           Figure figure, FindingMetric metric) {
  MetricFindings out;
  const int n = m.size;
  std::vector<std::optional<double>> best(static_cast<std::size_t>(n));
  std::vector<double> bests;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j)
      if (const std::optional<double> v = i != j ? figure(m, i, j) : std::nullopt; v && (!best[i] || *v > *best[i]))
        best[static_cast<std::size_t>(i)] = v;
    if (best[static_cast<std::size_t>(i)]) bests.push_back(*best[static_cast<std::size_t>(i)]);
  }
  // Two nodes have one link: nothing to compare it with.
  if (bests.size() < 3) return out;
  const double level = upper_median(bests);
  std::vector<bool> healthy(static_cast<std::size_t>(n), false);
  for (int i = 0; i < n; ++i)
    healthy[static_cast<std::size_t>(i)] =
        best[static_cast<std::size_t>(i)] && *best[static_cast<std::size_t>(i)] >= level * (1.0 - t.drop);
  // Each node's figure: its upper-quartile link to the healthy nodes (one
  // slow or noisy link among them barely moves it; a slow node has no fast
  // one). It is judged against the links among the healthy nodes, slow
  // links among them left out: their median, and their spread (a widely
  // spread fabric hides no 30x outlier but flags no 2x one).
  std::vector<std::optional<double>> score(static_cast<std::size_t>(n));
  std::vector<LinkValue> among_healthy;
  for (int i = 0; i < n; ++i) {
    if (!best[static_cast<std::size_t>(i)]) continue;
    std::vector<double> links;
    for (int j = 0; j < n; ++j)
      if (j != i && healthy[static_cast<std::size_t>(j)])
        if (const std::optional<double> v = figure(m, i, j)) {
          links.push_back(*v);
          if (healthy[static_cast<std::size_t>(i)] && i < j) among_healthy.push_back({i, j, *v});
        }
    score[static_cast<std::size_t>(i)] = links.empty() ? *best[static_cast<std::size_t>(i)] : percentile(links, 0.75);
  }
  std::vector<double> healthy_links;
  for (std::size_t k = 0; k < among_healthy.size(); ++k)
    if (!outlier_center(among_healthy, k, t)) healthy_links.push_back(among_healthy[k].value);
  if (healthy_links.empty()) return out;
  const RobustCenter nodes_center = robust_center(healthy_links);
  out.reference = nodes_center.median;
  const bool latency = metric == FindingMetric::latency;
  for (int i = 0; i < n; ++i) {
    const std::optional<double>& v = score[static_cast<std::size_t>(i)];
    if (!v || !is_outlier(*v, nodes_center, t)) continue;
    out.slow_nodes.insert(i);
    out.found.push_back(node_finding(hosts, i, metric, *v, nodes_center.median, ""));
  }

  // Links that touch no slow node, each judged against the others.
  std::vector<LinkValue> links;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (!out.slow_nodes.contains(i) && !out.slow_nodes.contains(j))
        if (const std::optional<double> v = figure(m, i, j)) links.push_back({i, j, *v});
  if (links.size() < 3) return out;
  for (std::size_t k = 0; k < links.size(); ++k) {
    const std::optional<RobustCenter> center = outlier_center(links, k, t);
    if (!center) continue;
    const auto [i, j, v] = links[k];
    Finding f;
    f.kind = FindingKind::slow_link;
    f.metric = metric;
    f.nodes = {i, j};
    f.hosts = {host_of(hosts, i), host_of(hosts, j)};
    const double ref = center->median;
    if (latency) {
      f.value_us = 1.0 / v;
      f.reference_us = 1.0 / ref;
      f.message =
          fmt::format("slow link {} <-> {}: the small message takes {:.1f} us, {:.1f}x the {:.1f} us median link",
                      f.hosts[0], f.hosts[1], *f.value_us, *f.value_us / *f.reference_us, *f.reference_us);
    } else {
      f.value_gbs = v;
      f.reference_gbs = ref;
      f.message = fmt::format("slow link {} <-> {}: {:.3f} GB/s, {:.0f}% of the {:.3f} GB/s median link", f.hosts[0],
                              f.hosts[1], v, 100.0 * v / ref, ref);
    }
    out.found.push_back(std::move(f));
  }
  return out;
}

// Whether `found` names node i slow (with a figure, not for the lack of one).
bool names_node(const std::vector<Finding>& found, int i) {
  return std::any_of(found.begin(), found.end(), [i](const Finding& f) {
    return f.kind == FindingKind::slow_node && f.metric != FindingMetric::no_figure && f.nodes[0] == i;
  });
}

// A node slow with most of its partners (two at least), by either metric, is
// the node, not its links, though its best links kept its own figure above
// the threshold: a lossy host's links each run at another fraction of the
// others' (11%, 18%, 29%), some by bandwidth, some by latency. The node slow
// with the largest share of its partners is taken first (the slower at a
// tie), and its links with it: a healthy node beside two such nodes is then
// slow with none. Its figure is its median link by the metric with a
// reference (bandwidth first).
void promote_nodes(std::vector<Finding>& found, const PairMatrix& m, const std::vector<std::string>& hosts,
                   const std::optional<double>& bw_ref, const std::optional<double>& lat_ref) {
  const auto touches = [](const Finding& f, int i) {
    return f.kind == FindingKind::slow_link && (f.nodes[0] == i || f.nodes[1] == i);
  };
  struct Candidate {
    int node = -1;
    int slow = 0;
    int partners = 0;
    FindingMetric metric = FindingMetric::bandwidth;
    double value = 0;
    double slowness = 0;  // its median link over the reference
  };
  for (;;) {
    Candidate best;
    for (int i = 0; i < m.size; ++i) {
      if (names_node(found, i)) continue;
      const auto slow =
          static_cast<int>(std::count_if(found.begin(), found.end(), [&](const Finding& f) { return touches(f, i); }));
      if (slow < 2) continue;
      int partners = 0;
      std::vector<double> bw;
      std::vector<double> speed;
      for (int j = 0; j < m.size; ++j) {
        if (j == i || names_node(found, j)) continue;
        const std::optional<double> b = bandwidth_of(m, i, j);
        const std::optional<double> s = speed_of(m, i, j);
        if (!b && !s) continue;
        ++partners;
        if (b) bw.push_back(*b);
        if (s) speed.push_back(*s);
      }
      if (slow * 2 <= partners) continue;
      Candidate c{i, slow, partners};
      if (bw_ref && !bw.empty()) {
        c.value = median(bw);
        c.slowness = c.value / *bw_ref;
      } else if (lat_ref && !speed.empty()) {
        c.metric = FindingMetric::latency;
        c.value = median(speed);
        c.slowness = c.value / *lat_ref;
      } else {
        continue;
      }
      const long lhs = static_cast<long>(c.slow) * best.partners;
      const long rhs = static_cast<long>(best.slow) * c.partners;
      if (best.node < 0 || lhs > rhs || (lhs == rhs && c.slowness < best.slowness)) best = c;
    }
    if (best.node < 0) return;
    const int i = best.node;
    std::erase_if(found, [&](const Finding& f) { return touches(f, i); });
    found.push_back(node_finding(hosts, i, best.metric, best.value,
                                 best.metric == FindingMetric::latency ? *lat_ref : *bw_ref,
                                 fmt::format(" (slow with {} of its {} partners)", best.slow, best.partners)));
  }
}

}  // namespace

std::vector<Finding> find_outliers(const PairMatrix& m, const std::vector<std::string>& hosts,
                                   const OutlierThresholds& thresholds) {
  MetricFindings by_bandwidth = outliers_by(m, hosts, thresholds, bandwidth_of, FindingMetric::bandwidth);
  MetricFindings by_latency = outliers_by(m, hosts, thresholds, speed_of, FindingMetric::latency);
  std::vector<Finding> findings = std::move(by_bandwidth.found);
  // Latency names what bandwidth did not (a lossy host retransmits: its
  // small messages wait while large ones may still average out).
  for (Finding& f : by_latency.found) {
    const bool known =
        std::any_of(findings.begin(), findings.end(), [&](const Finding& g) { return same_finding(f, g); }) ||
        (f.kind == FindingKind::slow_link &&
         (by_bandwidth.slow_nodes.contains(f.nodes[0]) || by_bandwidth.slow_nodes.contains(f.nodes[1])));
    if (!known) findings.push_back(std::move(f));
  }
  promote_nodes(findings, m, hosts, by_bandwidth.reference, by_latency.reference);
  // A node with no figure while others have one: its exchanges were cut or
  // failed, and it is the first to measure again.
  std::vector<int> measured;
  for (int i = 0; i < m.size; ++i)
    for (int j = 0; j < m.size; ++j)
      if (i != j && (bandwidth_of(m, i, j) || speed_of(m, i, j))) {
        measured.push_back(i);
        break;
      }
  if (measured.size() >= 2 && static_cast<int>(measured.size()) < m.size) {
    for (int i = 0; i < m.size; ++i) {
      if (std::find(measured.begin(), measured.end(), i) != measured.end()) continue;
      Finding f;
      f.kind = FindingKind::slow_node;
      f.metric = FindingMetric::no_figure;
      f.nodes = {i};
      f.hosts = {host_of(hosts, i)};
      // The healthy figures it will be judged against once measured.
      f.reference_gbs = by_bandwidth.reference.value_or(0.0);
      if (by_latency.reference) f.reference_us = 1.0 / *by_latency.reference;
      f.message = fmt::format("no figure for {}: each of its exchanges was cut before it finished", f.hosts[0]);
      findings.push_back(std::move(f));
    }
  }
  return findings;
}

bool same_finding(const Finding& a, const Finding& b) {
  return a.kind == b.kind && a.nodes == b.nodes && a.rail == b.rail;
}

namespace {

// Rail l's figure of node `node` as its rail-level finding says it, for the
// NIC's message: "0.012 GB/s, 9% of the 0.130 GB/s" or the latency's.
std::string rail_figure_text(const Finding& f) {
  if (f.metric == FindingMetric::latency && f.value_us && f.reference_us)
    return fmt::format("take {:.1f} us for the small message, {:.1f}x the {:.1f} us", *f.value_us,
                       *f.value_us / *f.reference_us, *f.reference_us);
  return fmt::format("run at {:.3f} GB/s, {:.0f}% of the {:.3f} GB/s", f.value_gbs,
                     f.reference_gbs > 0 ? 100.0 * f.value_gbs / f.reference_gbs : 0.0, f.reference_gbs);
}

}  // namespace

std::optional<Finding> find_slow_uplink(const PairMatrix& m, const std::vector<std::string>& hosts,
                                        const OutlierThresholds& thresholds) {
  const int n = m.size;
  if (n < 4 || !(thresholds.drop > 0 && thresholds.drop < 1)) return std::nullopt;
  // A pair's distance: the time a byte takes (bandwidth's inverse).
  std::vector<Link> links;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      if (const std::optional<double> bw = bandwidth_of(m, a, b); bw && *bw > 0) links.push_back({a, b, 1.0 / *bw});
  if (links.size() < 3) return std::nullopt;
  std::sort(links.begin(), links.end(), [](const Link& x, const Link& y) { return x.us < y.us; });
  const SplitSearch search = search_split(links, n, hosts, 1.0 / (1.0 - thresholds.drop));
  if (!search.best) return std::nullopt;
  const Split& split = *search.best;
  // The side of the lowest node is "near"; the rest are behind the uplink.
  Finding f;
  f.kind = FindingKind::slow_uplink;
  f.metric = FindingMetric::bandwidth;
  std::vector<std::string> near;
  std::vector<std::string> far;
  for (int node = 0; node < n; ++node) {
    const bool behind = split.root[static_cast<std::size_t>(node)] != split.root[0];
    (behind ? far : near).push_back(host_of(hosts, node));
    if (behind) f.nodes.push_back(node);
  }
  f.hosts = far;
  f.value_gbs = 1.0 / split.cross_us;
  f.reference_gbs = 1.0 / split.in_us;
  std::size_t across = 0;
  for (const Link& l : links)
    across += split.root[static_cast<std::size_t>(l.a)] != split.root[static_cast<std::size_t>(l.b)] ? 1 : 0;
  f.message = fmt::format(
      "slow uplink between {{{}}} and {{{}}}: the {} node pairs across run at {:.3f} GB/s (median), {:.0f}% of the "
      "{:.3f} GB/s of the pairs within each group, while every node is fast with its own group",
      host_list(near), host_list(far), across, f.value_gbs, 100.0 * f.value_gbs / f.reference_gbs, f.reference_gbs);
  return f;
}

namespace {

// Drops from `found` what a slow `uplink` explains in the matrix `m`: a link
// across it, a node fast with its own group (a rail's noise among the slow
// links across named one of them slow on the test bed).
void drop_explained(std::vector<Finding>& found, const PairMatrix& m, const Finding& uplink,
                    const OutlierThresholds& thresholds) {
  const std::set<int> far(uplink.nodes.begin(), uplink.nodes.end());
  const auto across = [&far](int a, int b) { return far.contains(a) != far.contains(b); };
  // The pairs within the groups, in the matrix the findings came from (a
  // rail's figures are a rail's).
  std::vector<double> within;
  for (int a = 0; a < m.size; ++a)
    for (int b = a + 1; b < m.size; ++b)
      if (!across(a, b))
        if (const std::optional<double> bw = bandwidth_of(m, a, b)) within.push_back(*bw);
  if (within.empty()) return;
  const double healthy = (1.0 - thresholds.drop) * median(within);
  std::erase_if(found, [&](const Finding& f) {
    if (f.metric == FindingMetric::no_figure || f.kind == FindingKind::slow_uplink) return false;
    if (f.kind == FindingKind::slow_link) return across(f.nodes[0], f.nodes[1]);
    std::vector<double> own;
    for (int p = 0; p < m.size; ++p)
      if (p != f.nodes[0] && !across(f.nodes[0], p))
        if (const std::optional<double> bw = bandwidth_of(m, f.nodes[0], p)) own.push_back(*bw);
    return !own.empty() && median(own) >= healthy;
  });
}

}  // namespace

std::vector<Finding> find_suspects(const NodePairs& pairs, const std::vector<std::string>& hosts,
                                   const OutlierThresholds& thresholds) {
  std::vector<Finding> found = find_outliers(pairs.nodes, hosts, thresholds);
  // Groups fast within and slow across: the path between them, not the
  // nodes or links it slows.
  const std::optional<Finding> uplink = find_slow_uplink(pairs.nodes, hosts, thresholds);
  if (uplink) {
    drop_explained(found, pairs.nodes, *uplink, thresholds);
    found.push_back(*uplink);
  }
  const std::size_t rails = pairs.rails.size();
  if (rails < 2) return found;
  // Each rail judged on its own: its links are one NIC of each end.
  std::vector<std::vector<Finding>> by_rail;
  by_rail.reserve(rails);
  for (const PairMatrix& rail : pairs.rails) {
    by_rail.push_back(find_outliers(rail, hosts, thresholds));
    if (uplink) drop_explained(by_rail.back(), rail, *uplink, thresholds);
  }
  const auto named_on = [&](const Finding& f, std::size_t l) -> const Finding* {
    for (const Finding& g : by_rail[l])
      if (g.kind == f.kind && g.nodes == f.nodes && g.metric != FindingMetric::no_figure) return &g;
    return nullptr;
  };
  // Whether any finding on a rail outside `on` touches `node`.
  const auto slow_elsewhere = [&](int node, const std::vector<std::size_t>& on) {
    for (std::size_t r = 0; r < rails; ++r) {
      if (std::find(on.begin(), on.end(), r) != on.end()) continue;
      for (const Finding& g : by_rail[r])
        if (g.metric != FindingMetric::no_figure && std::find(g.nodes.begin(), g.nodes.end(), node) != g.nodes.end())
          return true;
    }
    return false;
  };
  std::vector<Finding> nics;
  std::set<int> nic_nodes;
  std::set<std::pair<int, int>> rail_links;
  for (std::size_t l = 0; l < rails; ++l)
    for (const Finding& f : by_rail[l]) {
      if (f.metric == FindingMetric::no_figure) continue;
      std::vector<std::size_t> on;
      for (std::size_t r = 0; r < rails; ++r)
        if (named_on(f, r) != nullptr) on.push_back(r);
      // Slow on every rail: the node or the link, as the nodes' matrix says.
      if (on.size() == rails) continue;
      // A NIC is slow beside rails that are not: where the node's links are
      // slow on another rail too (a lossy host's rails each land on another
      // side of the threshold), it is the node, as the nodes' matrix says.
      if (f.kind == FindingKind::slow_node && slow_elsewhere(f.nodes[0], on)) continue;
      Finding nic = f;
      nic.rail = static_cast<int>(l);
      std::vector<std::string> others;
      for (std::size_t r = 0; r < rails; ++r)
        if (std::find(on.begin(), on.end(), r) == on.end()) others.push_back(std::to_string(r));
      if (f.kind == FindingKind::slow_node) {
        nic.kind = FindingKind::slow_nic;
        nic_nodes.insert(f.nodes[0]);
        nic.message = fmt::format(
            "slow NIC of {} on rail {}: its rail-{} links {} of the healthy nodes' rail-{} links, while its rail{} "
            "{} {} not slow",
            f.hosts[0], l, l, rail_figure_text(f), l, others.size() == 1 ? "" : "s", fmt::join(others, ", "),
            others.size() == 1 ? "is" : "are");
      } else {
        rail_links.insert({f.nodes[0], f.nodes[1]});
        nic.message = fmt::format(
            "slow link {} <-> {} on rail {}: its rail-{} exchanges {} of the median rail-{} link, while on rail{} {} "
            "{} not slow",
            f.hosts[0], f.hosts[1], l, l, rail_figure_text(f), l, others.size() == 1 ? "" : "s",
            fmt::join(others, ", "), others.size() == 1 ? "it is" : "they are");
      }
      nics.push_back(std::move(nic));
    }
  // A node whose NIC explains its slowness is not named as a node, nor a
  // link that a rail alone explains.
  std::erase_if(found, [&](const Finding& f) {
    if (f.metric == FindingMetric::no_figure) return false;
    if (f.kind == FindingKind::slow_node) return nic_nodes.contains(f.nodes[0]);
    return rail_links.contains({f.nodes[0], f.nodes[1]});
  });
  // A rail's link to a node that stays slow as a node is that node's.
  for (Finding& nic : nics) {
    if (nic.kind == FindingKind::slow_link && (names_node(found, nic.nodes[0]) || names_node(found, nic.nodes[1])))
      continue;
    if (std::none_of(found.begin(), found.end(), [&](const Finding& g) { return same_finding(g, nic); }))
      found.push_back(std::move(nic));
  }
  return found;
}

namespace {

// What the first pass suspects, for choosing who measures a suspect again:
// never a suspect node, never across a suspect link. A node whose only
// suspicion is a link to a third node is healthy with the others: it is
// taken when the nodes no suspect touches run out (with one slow node and
// one slow link among four, every node is touched, and the slow node was
// left with no partner at all).
struct Suspicion {
  std::set<int> nodes;
  std::set<std::pair<int, int>> links;
  std::set<int> ends;
  // The nodes behind each suspect or known uplink (node 0's side is never
  // behind, so one cut is one set): the others measure with their own side
  // of every one.
  std::set<std::set<int>> uplinks;

  explicit Suspicion(const std::vector<Finding>& suspects, const std::vector<Finding>& known = {}) {
    add(suspects);
    add(known);
  }

  void add(const std::vector<Finding>& found) {
    for (const Finding& f : found) {
      if (f.kind == FindingKind::slow_uplink) {
        uplinks.insert(behind(f));
      } else if (f.kind == FindingKind::slow_link) {
        links.insert({std::min(f.nodes[0], f.nodes[1]), std::max(f.nodes[0], f.nodes[1])});
        ends.insert(f.nodes.begin(), f.nodes.end());
      } else {
        nodes.insert(f.nodes[0]);
      }
    }
  }

  static std::set<int> behind(const Finding& uplink) { return {uplink.nodes.begin(), uplink.nodes.end()}; }

  // Whether the uplink with `far` behind it lies between a and p.
  static bool separates(const std::set<int>& far, int a, int p) { return far.contains(a) != far.contains(p); }

  [[nodiscard]] bool may_pair(int a, int p) const {
    return p != a && !nodes.contains(p) && !links.contains({std::min(a, p), std::max(a, p)}) &&
           std::none_of(uplinks.begin(), uplinks.end(), [&](const std::set<int>& u) { return separates(u, a, p); });
  }

  // Pairs across the uplink with `far` behind it, neither end a suspect
  // node, and across no other uplink (whose slowness would be counted as
  // this one's).
  [[nodiscard]] bool across(const std::set<int>& far, int a, int p) const {
    return separates(far, a, p) && !nodes.contains(a) && !nodes.contains(p) &&
           std::none_of(uplinks.begin(), uplinks.end(),
                        [&](const std::set<int>& u) { return u != far && separates(u, a, p); });
  }
};

}  // namespace

std::vector<std::pair<int, int>> confirmation_pairs(const std::vector<Finding>& suspects, int nodes,
                                                    const std::vector<Finding>& known, int partners) {
  const Suspicion suspicion(suspects, known);
  std::vector<int> clean;
  std::vector<int> ends;
  for (int i = 0; i < nodes; ++i)
    if (!suspicion.nodes.contains(i)) (suspicion.ends.contains(i) ? ends : clean).push_back(i);
  std::set<std::pair<int, int>> pairs;
  const auto add = [&pairs](int a, int b) { pairs.insert({std::min(a, b), std::max(a, b)}); };
  // Each suspect's partners taken in turn from the clean nodes, so that the
  // second pass spreads over them rather than leaning on one; then from the
  // ends of suspect links.
  std::size_t next = 0;
  const auto candidates = [&](int a, int avoid) {
    std::vector<int> out;
    for (std::size_t k = 0; k < clean.size(); ++k)
      if (const int p = clean[(next + k) % clean.size()]; p != avoid && suspicion.may_pair(a, p)) out.push_back(p);
    for (const int p : ends)
      if (p != avoid && suspicion.may_pair(a, p)) out.push_back(p);
    return out;
  };
  for (const Finding& f : suspects) {
    if (f.kind == FindingKind::slow_uplink) {
      // Up to `partners` pairs across, each node in one at most.
      const std::set<int> far = Suspicion::behind(f);
      std::set<int> used;
      int added = 0;
      for (int a = 0; a < nodes && added < partners; ++a)
        for (int b = a + 1; b < nodes && added < partners && !used.contains(a); ++b)
          if (!used.contains(b) && suspicion.across(far, a, b)) {
            add(a, b);
            used.insert({a, b});
            ++added;
          }
      continue;
    }
    if (f.kind == FindingKind::slow_link) {
      add(f.nodes[0], f.nodes[1]);
      for (const int end : {f.nodes[0], f.nodes[1]}) {
        const std::vector<int> c = candidates(end, end == f.nodes[0] ? f.nodes[1] : f.nodes[0]);
        if (c.empty()) continue;
        add(end, c.front());
        ++next;
      }
      continue;
    }
    const std::vector<int> c = candidates(f.nodes[0], -1);
    const std::size_t count = std::min(static_cast<std::size_t>(std::max(partners, 0)), c.size());
    for (std::size_t k = 0; k < count; ++k) add(f.nodes[0], c[k]);
    next += count;
  }
  return {pairs.begin(), pairs.end()};
}

std::vector<std::vector<int>> pack_rounds(const std::vector<std::pair<int, int>>& pairs, int nodes) {
  std::vector<std::vector<int>> rounds;
  std::vector<bool> placed(pairs.size(), false);
  std::size_t left = pairs.size();
  while (left > 0) {
    std::vector<int> partner(static_cast<std::size_t>(nodes), -1);
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      const auto [a, b] = pairs[k];
      if (placed[k] || partner[static_cast<std::size_t>(a)] >= 0 || partner[static_cast<std::size_t>(b)] >= 0) continue;
      partner[static_cast<std::size_t>(a)] = b;
      partner[static_cast<std::size_t>(b)] = a;
      placed[k] = true;
      --left;
    }
    rounds.push_back(std::move(partner));
  }
  return rounds;
}

std::vector<PairRound> confirmation_rounds(const std::vector<Finding>& suspects, int nodes,
                                           const std::vector<Finding>& known) {
  // By rail, the suspects of no one rail (-1) first.
  std::map<int, std::vector<Finding>> by_rail;
  for (const Finding& f : suspects) by_rail[f.rail.value_or(-1)].push_back(f);
  std::vector<PairRound> out;
  for (const auto& [rail, group] : by_rail) {
    // The other rails' suspects are no healthy partner either.
    std::vector<Finding> others = known;
    for (const Finding& f : suspects)
      if (f.rail.value_or(-1) != rail) others.push_back(f);
    for (std::vector<int>& round : pack_rounds(confirmation_pairs(group, nodes, others), nodes))
      out.push_back(PairRound{std::move(round), rail});
  }
  return out;
}

namespace {

// Whether a second-pass exchange is slow again by the suspect's metric and
// against the first pass's healthy reference; nullopt when it has no figure.
std::optional<bool> slow_again(const Finding& f, const PairMatrix& second, int a, int b, const OutlierThresholds& t) {
  const std::optional<double> bw = bandwidth_of(second, a, b);
  const std::optional<double> speed = speed_of(second, a, b);
  const bool by_bw = f.metric != FindingMetric::latency;
  const bool by_lat = f.metric != FindingMetric::bandwidth;
  std::optional<bool> slow;
  // A suspect with no figure has no reference of its own: any figure then
  // counts, and it is judged as soon as it has one.
  if (by_bw && bw) slow = f.reference_gbs > 0 ? *bw < f.reference_gbs * (1.0 - t.drop) : false;
  if (by_lat && speed && f.reference_us)
    slow = slow.value_or(false) || 1.0 / *speed > *f.reference_us / (1.0 - t.drop);
  else if (by_lat && speed && !slow)
    slow = false;
  return slow;
}

Recheck recheck_of(const PairMatrix& second, const std::vector<std::string>& hosts, int a, int b, bool slow) {
  Recheck r;
  r.nodes = {a, b};
  r.hosts = {host_of(hosts, a), host_of(hosts, b)};
  r.bandwidth_gbs = bandwidth_of(second, a, b);
  if (const std::optional<double> speed = speed_of(second, a, b)) r.latency_us = 1.0 / *speed;
  r.slow = slow;
  return r;
}

// Whether a second-pass exchange stands out from `others` of the same pass
// by the suspect's metric: its bandwidth below (1 - drop) x theirs (the
// median), or its latency above theirs over (1 - drop). The first pass's
// reference alone does not tell a slow link from a slower pass: on a machine
// that got busier between the passes, a healthy link measured again at 0.048
// GB/s beside its end's 0.071 GB/s with another partner, both under a
// quarter of the reference, and was confirmed slow. True where `others`
// have no figure to compare with.
bool stands_out(const Finding& f, const Recheck& check, const std::vector<Recheck>& others,
                const OutlierThresholds& t) {
  std::vector<double> bandwidths;
  std::vector<double> latencies;
  for (const Recheck& o : others) {
    if (o.bandwidth_gbs) bandwidths.push_back(*o.bandwidth_gbs);
    if (o.latency_us) latencies.push_back(*o.latency_us);
  }
  const bool by_bw = f.metric != FindingMetric::latency && check.bandwidth_gbs && !bandwidths.empty();
  const bool by_lat = f.metric != FindingMetric::bandwidth && check.latency_us && !latencies.empty();
  if (!by_bw && !by_lat) return true;
  return (by_bw && *check.bandwidth_gbs < (1.0 - t.drop) * median(bandwidths)) ||
         (by_lat && *check.latency_us > median(latencies) / (1.0 - t.drop));
}

// "0.012 GB/s, 812.0 us"
std::string figures_text(const Recheck& r) {
  std::vector<std::string> figures;
  if (r.bandwidth_gbs) figures.push_back(fmt::format("{:.3f} GB/s", *r.bandwidth_gbs));
  if (r.latency_us) figures.push_back(fmt::format("{:.1f} us", *r.latency_us));
  return fmt::format("{}", fmt::join(figures, ", "));
}

// "node0 <-> node1 (0.071 GB/s, 10.2 us)"
std::string pair_text(const Recheck& r) {
  return fmt::format("{} <-> {} ({})", r.hosts[0], r.hosts[1], figures_text(r));
}

std::string pairs_text(const std::vector<Recheck>& checks) {
  std::vector<std::string> parts;
  for (const Recheck& r : checks) parts.push_back(pair_text(r));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// "node0 (0.012 GB/s, 812.0 us)": the partner of `other`.
std::string recheck_text(const Recheck& r, int other) {
  return fmt::format("{} ({})", r.hosts[r.nodes[0] == other ? 1 : 0], figures_text(r));
}

std::string rechecks_text(const std::vector<Recheck>& checks, int suspect, bool slow) {
  std::vector<std::string> parts;
  for (const Recheck& r : checks)
    if (r.slow == slow) parts.push_back(recheck_text(r, suspect));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// Sets a link suspect's checks from the second pass: the link itself first,
// then each end with its other partners; whether the link is slow again,
// nullopt where it was not measured again.
std::optional<bool> recheck_link(Finding& f, const PairMatrix& second, const std::vector<std::string>& hosts,
                                 const OutlierThresholds& t, const Suspicion& suspicion) {
  const int a = f.nodes[0];
  const int b = f.nodes[1];
  f.checks.clear();
  const std::optional<bool> again = slow_again(f, second, a, b, t);
  if (again) f.checks.push_back(recheck_of(second, hosts, a, b, *again));
  for (int end : {a, b})
    for (int p = 0; p < second.size; ++p) {
      if (p == a || p == b || !suspicion.may_pair(end, p)) continue;
      if (const std::optional<bool> s = slow_again(f, second, end, p, t))
        f.checks.push_back(recheck_of(second, hosts, end, p, *s));
    }
  return again;
}

}  // namespace

Confirmation confirm_suspects(std::vector<Finding> suspects, const NodePairs& second_pass,
                              const std::vector<std::string>& hosts, const OutlierThresholds& t,
                              const std::vector<Finding>& known) {
  Confirmation out;
  const Suspicion suspicion(suspects, known);
  const PairMatrix none(second_pass.nodes.size);
  for (Finding& f : suspects) {
    // A rail's suspect is judged by that rail's exchanges.
    const PairMatrix& second = !f.rail ? second_pass.nodes
                               : static_cast<std::size_t>(*f.rail) < second_pass.rails.size()
                                   ? second_pass.rails[static_cast<std::size_t>(*f.rail)]
                                   : none;
    const std::string on_rail = f.rail ? fmt::format(" on rail {}", *f.rail) : std::string();
    f.checks.clear();
    int slow = 0;
    int measured = 0;
    if (f.kind == FindingKind::slow_uplink) {
      std::vector<std::string> again;
      const std::set<int> far = Suspicion::behind(f);
      for (int a = 0; a < second.size; ++a)
        for (int b = a + 1; b < second.size; ++b) {
          if (!suspicion.across(far, a, b)) continue;
          const std::optional<bool> s = slow_again(f, second, a, b, t);
          if (!s) continue;
          ++measured;
          slow += *s ? 1 : 0;
          f.checks.push_back(recheck_of(second, hosts, a, b, *s));
          again.push_back(pair_text(f.checks.back()));
        }
      f.confirmed = measured > 0 && slow * 2 > measured && (slow >= 2 || measured == 1);
      if (*f.confirmed) {
        f.message +=
            fmt::format("; confirmed: slow again across, apart from the first pass's load: {}", fmt::join(again, ", "));
        out.findings.push_back(std::move(f));
      } else {
        f.message = "not confirmed: " + f.message +
                    (measured == 0 ? std::string("; no pair across could be measured again")
                                   : fmt::format("; measured again across at {}", fmt::join(again, ", ")));
        out.unconfirmed.push_back(std::move(f));
      }
      continue;
    }
    if (f.kind == FindingKind::slow_link) {
      const std::optional<bool> again = recheck_link(f, second, hosts, t, suspicion);
      // Slow again, and slower than its ends with their other partners in
      // the same pass.
      const std::vector<Recheck> ends(f.checks.begin() + (again ? 1 : 0), f.checks.end());
      const bool apart = again.value_or(false) && stands_out(f, f.checks.front(), ends, t);
      f.confirmed = apart;
      if (apart) {
        f.message += fmt::format("; confirmed: slow again when measured apart ({})", figures_text(f.checks.front()));
        out.findings.push_back(std::move(f));
      } else {
        f.message = "not confirmed: " + f.message +
                    (!again   ? std::string("; it could not be measured again")
                     : *again ? fmt::format("; measured again at {}, no slower than its ends with other partners ({})",
                                            figures_text(f.checks.front()), pairs_text(ends))
                              : fmt::format("; measured again at {}", figures_text(f.checks.front())));
        out.unconfirmed.push_back(std::move(f));
      }
      continue;
    }
    const int node = f.nodes[0];
    for (int p = 0; p < second.size; ++p) {
      if (!suspicion.may_pair(node, p)) continue;
      const std::optional<bool> s = slow_again(f, second, node, p, t);
      if (!s) continue;
      ++measured;
      slow += *s ? 1 : 0;
      f.checks.push_back(recheck_of(second, hosts, node, p, *s));
    }
    if (measured > 0 && slow * 2 > measured && (slow >= 2 || measured == 1)) {
      f.confirmed = true;
      f.message += fmt::format("; confirmed: slow again with {}", rechecks_text(f.checks, node, true));
      out.findings.push_back(std::move(f));
      continue;
    }
    // Slow with one partner and not with the others, and slower than with
    // them: that link, not the node.
    const auto it = std::find_if(f.checks.begin(), f.checks.end(), [](const Recheck& r) { return r.slow; });
    std::vector<Recheck> fast;
    std::copy_if(f.checks.begin(), f.checks.end(), std::back_inserter(fast), [](const Recheck& r) { return !r.slow; });
    if (slow == 1 && stands_out(f, *it, fast, t)) {
      // It reads as a link confirmed on its own: the link's figures first,
      // in the link's order, then each end's with its other partners.
      Finding link = f;
      link.kind = FindingKind::slow_link;
      link.nodes = {std::min(it->nodes[0], it->nodes[1]), std::max(it->nodes[0], it->nodes[1])};
      link.hosts = {host_of(hosts, link.nodes[0]), host_of(hosts, link.nodes[1])};
      if (it->bandwidth_gbs) link.value_gbs = *it->bandwidth_gbs;
      link.value_us = it->latency_us;
      recheck_link(link, second, hosts, t, suspicion);
      link.confirmed = true;
      link.message = fmt::format(
          "slow link {} <-> {}{}: {}{} was slow with most partners at first; confirmed: slow again when "
          "measured apart ({}), while {} was fast again with {}",
          link.hosts[0], link.hosts[1], on_rail, f.kind == FindingKind::slow_nic ? "the NIC of " : "",
          host_of(hosts, node), figures_text(*it), host_of(hosts, node), rechecks_text(f.checks, node, false));
      out.findings.push_back(std::move(link));
      continue;
    }
    f.confirmed = false;
    f.message = "not confirmed: " + f.message +
                (measured == 0 ? std::string("; no healthy node was left to measure it with")
                 : slow == 1   ? fmt::format("; measured again slow with {} only, and no slower than with {}",
                                             rechecks_text(f.checks, node, true), rechecks_text(f.checks, node, false))
                               : fmt::format("; measured again at healthy figures with {}",
                                             rechecks_text(f.checks, node, false)));
    out.unconfirmed.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> new_suspects(const std::vector<Finding>& first, const std::vector<Finding>& confirmed) {
  std::vector<Finding> out;
  for (const Finding& f : first)
    if (std::none_of(confirmed.begin(), confirmed.end(), [&f](const Finding& c) { return same_finding(f, c); }))
      out.push_back(f);
  return out;
}

IslandsResult find_latency_islands(const PairMatrix& matrix, const std::vector<std::string>& hosts, double min_ratio) {
  const int n = matrix.size;
  std::vector<Link> links;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      if (const auto us = pair_latency(matrix, a, b); us && *us > 0) links.push_back({a, b, *us});
  if (n < 3 || links.size() < 2) return one_island(n, hosts, min_ratio, "too few nodes or measured pairs to split");
  std::sort(links.begin(), links.end(), [](const Link& x, const Link& y) { return x.us < y.us; });

  const SplitSearch search = search_split(links, n, hosts, min_ratio);
  if (search.top_step < min_ratio)
    return one_island(n, hosts, min_ratio,
                      fmt::format("the fabric is flat (the largest step between pair latencies is {:.2f}x, below "
                                  "--island-ratio {:g})",
                                  search.top_step, min_ratio));
  const std::optional<Split>& best = search.best;
  if (!best) {
    if (!search.first.flaw.empty()) return one_island(n, hosts, min_ratio, search.first.flaw);
    return one_island(n, hosts, min_ratio,
                      fmt::format("the fabric is flat (across a candidate split the latency is only {:.2f}x that "
                                  "within, below --island-ratio {:g})",
                                  search.first.ratio, min_ratio));
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

// " (the islands' cut, the node order's and 1 random)": which cuts were tried.
std::string sources_text(const BisectionResult& b) {
  int islands = 0;
  int order = 0;
  int random = 0;
  for (const HalvingResult& h : b.halvings) {
    islands += h.source == "islands" ? 1 : 0;
    order += h.source == "node order" ? 1 : 0;
    random += h.source == "random" ? 1 : 0;
  }
  std::vector<std::string> parts;
  if (islands > 0) parts.emplace_back("the latency islands' cut");
  if (order > 0) parts.emplace_back("the node order's");
  if (random > 0) parts.push_back(fmt::format("{} random", random));
  if (parts.empty()) return "";
  return fmt::format(" ({})", fmt::join(parts, ", "));
}

}  // namespace

void analyze_bisection(BisectionResult& result, double limit) {
  result.limit = limit;
  result.distinct_halvings.reset();
  result.halvings_possible.reset();
  result.coverage.reset();
  if (!result.halvings.empty()) {
    std::set<std::pair<std::vector<int>, std::vector<int>>> cuts;
    for (const HalvingResult& h : result.halvings) cuts.insert(cut_of(h.half_a, h.half_b));
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
  else if (result.coverage && *result.coverage >= 1)
    result.message = fmt::format(
        "non-blocking within {:g}:1 (worst of {} halving{} {:.2f}:1: {:.2f} GB/s together against "
        "{:.2f} GB/s alone){}",
        limit, result.halvings.size(), result.halvings.size() == 1 ? "" : "s", o, w.loaded_gbs, w.isolated_gbs,
        coverage_text(result));
  else
    // Not every cut measured: what was seen, never more.
    result.message = fmt::format(
        "no oversubscription beyond {:g}:1 in the {} halving{} measured{} (worst {:.2f}:1: {:.2f} GB/s together "
        "against {:.2f} GB/s alone){}",
        limit, result.halvings.size(), result.halvings.size() == 1 ? "" : "s", sources_text(result), o, w.loaded_gbs,
        w.isolated_gbs, coverage_text(result));
}

}  // namespace fabricbench
