#include "fabricbench/results/result_consistency.hpp"

#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"

namespace fabricbench {
namespace {

void check_indices(const std::vector<int>& indices, std::size_t count, const std::string& where) {
  for (std::size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0 || static_cast<std::size_t>(indices[i]) >= count)
      throw UsageError(fmt::format("{}/{}: node {} is not one of the {} nodes (0 to {})", where, i, indices[i], count,
                                   static_cast<long long>(count) - 1));
  }
}

}  // namespace

void check_consistency(const RunResult& result) {
  const RunInfo& run = result.run;
  const auto nodes = static_cast<std::size_t>(run.nodes < 0 ? 0 : run.nodes);
  if (run.hostnames.size() != nodes)
    throw UsageError(
        fmt::format("run.hostnames: {} names for the {} nodes of run.nodes", run.hostnames.size(), run.nodes));
  if (run.ranks_per_node.size() != nodes)
    throw UsageError(fmt::format("run.ranks_per_node: {} entries for the {} nodes of run.nodes",
                                 run.ranks_per_node.size(), run.nodes));
  std::int64_t ranks = 0;
  for (const int r : run.ranks_per_node) ranks += r;
  if (ranks != run.ranks)
    throw UsageError(fmt::format("run.ranks: {}, but run.ranks_per_node adds up to {}", run.ranks, ranks));
  if (!run.rank_nodes.empty()) {
    if (static_cast<std::int64_t>(run.rank_nodes.size()) != run.ranks)
      throw UsageError(
          fmt::format("run.rank_nodes: {} entries for the {} ranks of run.ranks", run.rank_nodes.size(), run.ranks));
    check_indices(run.rank_nodes, nodes, "run.rank_nodes");
  }
  if (result.stragglers) {
    const StragglersResult& st = *result.stragglers;
    for (std::size_t i = 0; i < st.rounds.size(); ++i) {
      const PaceRound& round = st.rounds[i];
      const std::string where = fmt::format("stragglers/rounds/{}", i);
      for (std::size_t r = 0; r < round.ranks.size(); ++r) {
        const RankPace& pace = round.ranks[r];
        check_indices({pace.node}, nodes, fmt::format("{}/ranks/{}/node", where, r));
        if (pace.last > round.iterations || pace.late > round.iterations)
          throw UsageError(fmt::format("{}/ranks/{}: last in {} and late in {} of {} iterations", where, r, pace.last,
                                       pace.late, round.iterations));
      }
    }
    for (const auto* list : {&st.found, &st.unconfirmed})
      for (std::size_t i = 0; i < list->size(); ++i) {
        const Straggler& s = (*list)[i];
        const std::string where = fmt::format("stragglers/{}/{}", list == &st.found ? "found" : "unconfirmed", i);
        check_indices({s.node}, nodes, where + "/node");
        if (s.late > s.iterations || s.again_late > s.again_iterations)
          throw UsageError(fmt::format("{}: late in more iterations than it ran", where));
      }
  }
  if (result.scaling) {
    for (std::size_t l = 0; l < result.scaling->levels.size(); ++l) {
      const LevelResult& level = result.scaling->levels[l];
      for (std::size_t g = 0; g < level.groups.size(); ++g) {
        const GroupResult& group = level.groups[g];
        const std::string where = fmt::format("scaling/levels/{}/groups/{}", l, g);
        check_indices(group.nodes, nodes, where + "/nodes");
        if (group.hosts.size() != group.nodes.size())
          throw UsageError(
              fmt::format("{}/hosts: {} names for {} nodes", where, group.hosts.size(), group.nodes.size()));
      }
    }
  }
  std::size_t pair_nodes = nodes;
  if (result.pairs) {
    const PairsResult& p = *result.pairs;
    if (p.hosts.size() != nodes)
      throw UsageError(fmt::format("pairs.hosts: {} names for the {} nodes of run.nodes", p.hosts.size(), run.nodes));
    if (p.intra.size() > p.hosts.size())
      throw UsageError(
          fmt::format("pairs.intra_node: {} entries for the {} nodes of pairs.hosts", p.intra.size(), p.hosts.size()));
    pair_nodes = p.hosts.size();
  }
  for (std::size_t f = 0; f < result.findings.size(); ++f) {
    const Finding& finding = result.findings[f];
    check_indices(finding.nodes, pair_nodes, fmt::format("findings/{}/nodes", f));
    if (finding.hosts.size() != finding.nodes.size())
      throw UsageError(
          fmt::format("findings/{}/hosts: {} names for {} nodes", f, finding.hosts.size(), finding.nodes.size()));
    if (finding.kind == FindingKind::slow_nic && !finding.rail)
      throw UsageError(fmt::format("findings/{}/rail: missing: a slow_nic names its rail", f));
    if (finding.rail && result.pairs && *finding.rail >= result.pairs->ranks_per_node)
      throw UsageError(fmt::format("findings/{}/rail: rail {} of nodes with {} ranks", f, *finding.rail,
                                   result.pairs->ranks_per_node));
  }
  // Placement and storage: node numbers within the run's nodes (the report
  // indexes host lists with them).
  if (result.islands) {
    for (std::size_t i = 0; i < result.islands->islands.size(); ++i) {
      const LatencyIsland& island = result.islands->islands[i];
      check_indices(island.nodes, nodes, fmt::format("islands/islands/{}/nodes", i));
      if (island.hosts.size() != island.nodes.size())
        throw UsageError(fmt::format("islands/islands/{}/hosts: {} names for {} nodes", i, island.hosts.size(),
                                     island.nodes.size()));
    }
  }
  if (result.bisection) {
    for (std::size_t h = 0; h < result.bisection->halvings.size(); ++h) {
      const HalvingResult& halving = result.bisection->halvings[h];
      const std::string where = fmt::format("bisection/halvings/{}", h);
      check_indices(halving.half_a, nodes, where + "/half_a");
      check_indices(halving.half_b, nodes, where + "/half_b");
      for (std::size_t p = 0; p < halving.pairs.size(); ++p)
        check_indices({halving.pairs[p].a, halving.pairs[p].b}, nodes, fmt::format("{}/pairs/{}", where, p));
    }
  }
  if (result.storage) {
    const StorageResult& s = *result.storage;
    std::vector<int> rows;
    for (const StorageNode& n : s.nodes) rows.push_back(n.node);
    check_indices(rows, nodes, "storage/nodes");
    for (const std::optional<int>& slowest : {s.slowest_write_node, s.slowest_read_node})
      if (slowest) check_indices({*slowest}, nodes, "storage/slowest");
  }
}

}  // namespace fabricbench
