#include "fabricbench/records/pairs.hpp"

#include <cstdint>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"

namespace fabricbench {

std::string_view name(FindingKind kind) {
  switch (kind) {
    case FindingKind::slow_link:
      return "slow_link";
    case FindingKind::slow_nic:
      return "slow_nic";
    case FindingKind::slow_uplink:
      return "slow_uplink";
    case FindingKind::slow_node:
      break;
  }
  return "slow_node";
}

std::string_view name(FindingMetric metric) {
  switch (metric) {
    case FindingMetric::latency:
      return "latency";
    case FindingMetric::no_figure:
      return "no_figure";
    case FindingMetric::bandwidth:
      break;
  }
  return "bandwidth";
}

std::vector<PairLink> links_of(const PairMatrix& m) {
  std::vector<PairLink> links;
  for_each_link(m, [&links](const PairLink& link) { links.push_back(link); });
  return links;
}

std::vector<IntraNodeLinks> intra_links_of(const PairsResult& p) {
  std::vector<IntraNodeLinks> nodes;
  nodes.reserve(p.intra.size());
  for (std::size_t n = 0; n < p.intra.size(); ++n)
    nodes.push_back({n, n < p.hosts.size() ? p.hosts[n] : std::string(), links_of(p.intra[n])});
  return nodes;
}

std::vector<RailLinks> rail_links_of(const PairsResult& p) {
  std::vector<RailLinks> rails;
  rails.reserve(p.rails.size());
  for (std::size_t l = 0; l < p.rails.size(); ++l) rails.push_back({static_cast<int>(l), links_of(p.rails[l])});
  return rails;
}

std::vector<PairMatrix> rails_of(const std::vector<RailLinks>& rails, std::size_t nodes, const std::string& path) {
  check_matrix_sizes(nodes, 0, 0);
  if (!rails.empty() && nodes * nodes > max_matrix_cells / rails.size())
    throw UsageError(fmt::format("{}: {} rails of {} nodes are larger than a result may hold ({} cells)", path,
                                 rails.size(), nodes, max_matrix_cells));
  std::vector<PairMatrix> out;
  out.reserve(rails.size());
  for (std::size_t l = 0; l < rails.size(); ++l) {
    if (rails[l].rail != static_cast<int>(l))
      throw UsageError(fmt::format("{}/{}/rail: rail {} where rail {} belongs", path, l, rails[l].rail, l));
    out.push_back(matrix_of(rails[l].links, static_cast<int>(nodes), fmt::format("{}/{}/links", path, l)));
  }
  return out;
}

bool has_links(const PairMatrix& m) {
  for (int from = 0; from < m.size; ++from)
    for (int to = 0; to < m.size; ++to)
      if (is_listed(m, from, to)) return true;
  return false;
}

PairMatrix matrix_of(const std::vector<PairLink>& links, int size, const std::string& path) {
  PairMatrix m(size);
  for (std::size_t i = 0; i < links.size(); ++i) {
    const PairLink& link = links[i];
    if (link.from < 0 || link.to < 0 || link.from >= size || link.to >= size)
      throw UsageError(
          fmt::format("{}/{}: a link {} -> {} names a node beyond the {} listed", path, i, link.from, link.to, size));
    m.bw(link.from, link.to) = link.bandwidth_gbs;
    m.lat(link.from, link.to) = link.latency_us;
    m.smaller(link.from, link.to) = link.bytes;
  }
  return m;
}

void check_matrix_sizes(std::size_t nodes, std::size_t intra_nodes, int ranks_per_node) {
  const auto rpn = static_cast<std::uint64_t>(ranks_per_node < 0 ? 0 : ranks_per_node);
  const std::uint64_t cells =
      static_cast<std::uint64_t>(nodes) * nodes + static_cast<std::uint64_t>(intra_nodes) * rpn * rpn;
  if (cells > max_matrix_cells)
    throw UsageError(
        fmt::format("pairs: a matrix of {} nodes and {} nodes of {} ranks is larger than a result may hold "
                    "({} cells)",
                    nodes, intra_nodes, ranks_per_node, max_matrix_cells));
}

}  // namespace fabricbench
