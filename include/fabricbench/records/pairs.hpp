#pragma once
// The node-pair matrix's records: bandwidth and latency per pair of nodes (and
// of local ranks), with "not measured" distinct from zero, and the findings
// named from them.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/core/field_list.hpp"

namespace fabricbench {

// A matrix over members (nodes, or local ranks) with "not measured" distinct
// from zero.
struct PairMatrix {
  int size = 0;
  std::vector<std::optional<double>> bandwidth_gbs;  // [from * size + to]
  std::vector<std::optional<double>> latency_us;
  // The message a bandwidth was measured with where the budget made it
  // smaller than the matrix's (a link too slow for the full one to fit).
  std::vector<std::optional<std::size_t>> smaller_bytes;
  PairMatrix() = default;
  explicit PairMatrix(int n)
      : size(n),
        bandwidth_gbs(static_cast<std::size_t>(n) * static_cast<std::size_t>(n)),
        latency_us(static_cast<std::size_t>(n) * static_cast<std::size_t>(n)),
        smaller_bytes(static_cast<std::size_t>(n) * static_cast<std::size_t>(n)) {}
  std::optional<double>& bw(int from, int to) {
    return bandwidth_gbs[static_cast<std::size_t>(from) * static_cast<std::size_t>(size) +
                         static_cast<std::size_t>(to)];
  }
  const std::optional<double>& bw(int from, int to) const {
    return bandwidth_gbs[static_cast<std::size_t>(from) * static_cast<std::size_t>(size) +
                         static_cast<std::size_t>(to)];
  }
  std::optional<double>& lat(int from, int to) {
    return latency_us[static_cast<std::size_t>(from) * static_cast<std::size_t>(size) + static_cast<std::size_t>(to)];
  }
  const std::optional<double>& lat(int from, int to) const {
    return latency_us[static_cast<std::size_t>(from) * static_cast<std::size_t>(size) + static_cast<std::size_t>(to)];
  }
  std::optional<std::size_t>& smaller(int from, int to) {
    return smaller_bytes[static_cast<std::size_t>(from) * static_cast<std::size_t>(size) +
                         static_cast<std::size_t>(to)];
  }
  const std::optional<std::size_t>& smaller(int from, int to) const {
    return smaller_bytes[static_cast<std::size_t>(from) * static_cast<std::size_t>(size) +
                         static_cast<std::size_t>(to)];
  }
};

// What a pass over node pairs measures: the node <-> node matrix (summed
// over rails) and, with several ranks a node, each rail's own (local rank
// l of every node).
struct NodePairs {
  PairMatrix nodes;
  std::vector<PairMatrix> rails;
};

// A round of a second pass over node pairs: every node's partner (-1: idle),
// as engine/pairs.hpp's partners() gives them, and the one rail it runs on
// (local rank `rail` of each node; -1: every rail at once).
struct PairRound {
  std::vector<int> partners;
  int rail = -1;
  bool operator==(const PairRound&) const = default;
};

struct PairsResult {
  std::size_t bytes = 0;        // large message: bandwidth
  std::size_t small_bytes = 0;  // small message: latency
  std::string mode = "full";    // "full": the tournament in node order; "random": a few rounds in a seeded order
  unsigned seed = 0;            // random: the order's seed
  int rounds_planned = 0;       // before the budget cut any
  std::vector<int> rounds;      // the rounds that ran
  int ranks_per_node = 0;
  std::vector<std::string> hosts;
  PairMatrix nodes;  // node <-> node (symmetric), summed over rails
  // Per rail (local rank l of every node), node <-> node, each rail's own
  // exchanges of the same rounds: a slow NIC is one node's one rail. Empty
  // with one rank a node (the rail is the node).
  std::vector<PairMatrix> rails;
  std::vector<PairMatrix> intra;  // per node: local rank <-> local rank
  std::uint64_t wrong = 0;        // wrong elements over all rounds
};

// A matrix's JSON form is the list of its measured links (a link measured
// in either figure), from row to row: a matrix of 512 nodes is mostly the
// links that were measured, not the 262,144 cells.
struct PairLink {
  int from = 0;
  int to = 0;
  std::optional<double> bandwidth_gbs;
  std::optional<double> latency_us;
  std::optional<std::size_t> bytes;  // the bandwidth's message, where the budget made it smaller
};

// One rail's links between nodes, as `pairs.rails` lists them.
struct RailLinks {
  int rail = 0;
  std::vector<PairLink> links;
};

// One node's links within it, as `pairs.intra_node` lists them.
struct IntraNodeLinks {
  std::size_t node = 0;
  std::string host;
  std::vector<PairLink> links;
};

// Whether the link from -> to is listed: measured in either figure.
inline bool is_listed(const PairMatrix& m, int from, int to) {
  return from != to && (m.bw(from, to) || m.lat(from, to));
}

template <class Put>
void for_each_link(const PairMatrix& m, Put&& put) {
  for (int from = 0; from < m.size; ++from)
    for (int to = 0; to < m.size; ++to)
      if (is_listed(m, from, to)) put(PairLink{from, to, m.bw(from, to), m.lat(from, to), m.smaller(from, to)});
}
std::vector<PairLink> links_of(const PairMatrix& m);
std::vector<IntraNodeLinks> intra_links_of(const PairsResult& p);
std::vector<RailLinks> rail_links_of(const PairsResult& p);
// The rails' matrices of `nodes` nodes the lists fill, each in its place: a
// rail listed out of order, or a link beyond the nodes, is a UsageError
// naming `path`.
std::vector<PairMatrix> rails_of(const std::vector<RailLinks>& rails, std::size_t nodes, const std::string& path);
bool has_links(const PairMatrix& m);

// The matrix of `size` members the links fill; a link naming a member
// beyond them is a UsageError naming `path`.
PairMatrix matrix_of(const std::vector<PairLink>& links, int size, const std::string& path);

// The most pair-matrix cells a file may make the reader allocate (nodes^2
// plus each node's ranks^2): a 2,048-node matrix, 64 MiB of memory. Beyond
// it a few bytes of JSON ("ranks_per_node": 2147483647) would cost
// gigabytes.
inline constexpr std::size_t max_matrix_cells = std::size_t{1} << 22;

// Throws UsageError "pairs: a matrix of N nodes and M x R ranks is larger
// than ..." before the matrices are allocated.
void check_matrix_sizes(std::size_t nodes, std::size_t intra_nodes, int ranks_per_node);

// A slow NIC is one node's rail: slow with every partner on that rail, while
// the node's other rails are not. A slow uplink is the path between groups
// of nodes, each fast within: its `nodes` are those behind it (every group
// but the lowest node's).
enum class FindingKind { slow_node, slow_link, slow_nic, slow_uplink };

// What named a suspect: its bandwidth, its latency (the small message's
// fastest exchange), or no figure at all (its exchanges were cut): a node
// with no figure is suspect, never absent.
enum class FindingMetric { bandwidth, latency, no_figure };

// One exchange of the second pass: the suspect with another partner (or a
// suspect link again), measured apart from the first pass's load.
struct Recheck {
  std::vector<int> nodes;  // the two ends
  std::vector<std::string> hosts;
  std::optional<double> bandwidth_gbs;
  std::optional<double> latency_us;
  bool slow = false;  // past the threshold again
};

struct Finding {
  FindingKind kind = FindingKind::slow_node;
  std::vector<int> nodes;  // the node, or the link's two ends (from, to)
  std::vector<std::string> hosts;
  double value_gbs = 0;      // the node's typical link to healthy nodes, or the link's bandwidth (0: none)
  double reference_gbs = 0;  // the healthy median it is compared with
  std::string message;
  FindingMetric metric = FindingMetric::bandwidth;
  std::optional<double> value_us;      // latency: the node's or the link's
  std::optional<double> reference_us;  // latency: the healthy median
  // The second pass: whether it confirmed the suspect (absent in files from
  // before there was one), and what it measured.
  std::optional<bool> confirmed;
  std::vector<Recheck> checks;
  std::optional<int> rail;  // a slow NIC's rail, or the rail of a link slow on it alone
};

std::string_view name(FindingKind kind);
std::string_view name(FindingMetric metric);

// ---- field lists (core/field_list.hpp) ------------------------------------

inline std::optional<FindingKind> from_name(std::string_view text, fields::tag<FindingKind>) {
  for (const FindingKind k :
       {FindingKind::slow_node, FindingKind::slow_link, FindingKind::slow_nic, FindingKind::slow_uplink})
    if (text == name(k)) return k;
  return std::nullopt;
}

inline std::optional<FindingMetric> from_name(std::string_view text, fields::tag<FindingMetric>) {
  for (const FindingMetric m : {FindingMetric::bandwidth, FindingMetric::latency, FindingMetric::no_figure})
    if (text == name(m)) return m;
  return std::nullopt;
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, Recheck>
void fields_of(Self& r, Field&& field) {
  field("nodes", r.nodes);
  field("hosts", r.hosts);
  field("bandwidth_gbs", r.bandwidth_gbs);
  field("latency_us", r.latency_us);
  field("slow", r.slow);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, PairLink>
void fields_of(Self& l, Field&& field) {
  field("from", l.from);
  field("to", l.to);
  field("bandwidth_gbs", l.bandwidth_gbs);
  field("latency_us", l.latency_us);
  field("bytes", fields::omitted(l.bytes));
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, RailLinks>
void fields_of(Self& r, Field&& field) {
  field("rail", r.rail);
  field("links", r.links);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, IntraNodeLinks>
void fields_of(Self& n, Field&& field) {
  field("node", n.node);
  field("host", n.host);
  field("links", n.links);
}

// The seed only in random mode; rounds_planned, absent from files written
// before the budget could cut rounds, reads as the rounds that ran.
template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, PairsResult>
void fields_of(Self& p, Field&& field) {
  field("bytes", p.bytes);
  field("small_bytes", p.small_bytes);
  field("rounds", p.rounds);
  field("mode", fields::omitted(p.mode));
  field("seed", fields::only_if(p.mode == "random", p.seed));
  field("rounds_planned", fields::converted(
                              p.rounds_planned, [](int planned) { return std::optional<int>(planned); },
                              [&p](const std::optional<int>& planned, auto& out, const std::string&) {
                                out = planned ? *planned : static_cast<int>(p.rounds.size());
                              }));
  field("ranks_per_node", p.ranks_per_node);
  field("hosts", p.hosts);
  field("links", fields::converted(
                     p.nodes, [](const PairMatrix& m) { return links_of(m); },
                     [&p](const std::vector<PairLink>& links, auto& out, const std::string& path) {
                       check_matrix_sizes(p.hosts.size(), 0, p.ranks_per_node);
                       out = matrix_of(links, static_cast<int>(p.hosts.size()), path);
                     }));
  field("intra_node",
        fields::converted(
            p.intra, [&p](const std::vector<PairMatrix>&) { return intra_links_of(p); },
            [&p](const std::vector<IntraNodeLinks>& nodes, auto& out, const std::string& path) {
              check_matrix_sizes(p.hosts.size(), nodes.size(), p.ranks_per_node);
              out.clear();
              for (std::size_t n = 0; n < nodes.size(); ++n)
                out.push_back(matrix_of(nodes[n].links, p.ranks_per_node, path + "/" + std::to_string(n) + "/links"));
            }));
  // Empty with one rank a node; absent in files from before rails were kept.
  field("rails", fields::converted(
                     p.rails, [&p](const std::vector<PairMatrix>&) { return std::optional(rail_links_of(p)); },
                     [&p](const std::optional<std::vector<RailLinks>>& rails, auto& out, const std::string& path) {
                       out = rails ? rails_of(*rails, p.hosts.size(), path) : std::vector<PairMatrix>();
                     }));
  field("wrong", p.wrong);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, Finding>
void fields_of(Self& f, Field&& field) {
  field("kind", f.kind);
  field("nodes", f.nodes);
  field("hosts", f.hosts);
  field("value_gbs", f.value_gbs);
  field("reference_gbs", f.reference_gbs);
  field("message", f.message);
  field("rail", fields::omitted(f.rail));
  // Absent in files from before latency and missing figures named suspects.
  field("metric", fields::converted(
                      f.metric, [](FindingMetric m) { return std::optional<FindingMetric>(m); },
                      [](const std::optional<FindingMetric>& m, auto& out, const std::string&) {
                        out = m.value_or(FindingMetric::bandwidth);
                      }));
  field("value_us", fields::omitted(f.value_us));
  field("reference_us", fields::omitted(f.reference_us));
  field("confirmed", fields::omitted(f.confirmed));
  field("checks", fields::omitted(f.checks));
}

}  // namespace fabricbench
