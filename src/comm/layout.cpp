#include "fabricbench/comm/layout.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <string>
#include <tuple>

#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"

namespace fabricbench {

std::string this_hostname() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "unknown";
  return host;
}

Layout layout_from(int rank, const std::vector<std::string>& hostname_of_rank, const std::vector<int>& leader_of_rank,
                   const std::vector<int>& local_rank_of_rank) {
  // Without MPI these lists come from files other processes wrote: every
  // index is checked before it is used.
  const std::size_t n = hostname_of_rank.size();
  if (leader_of_rank.size() != n || local_rank_of_rank.size() != n || rank < 0 || static_cast<std::size_t>(rank) >= n)
    throw SystemError(fmt::format("layout: {} host names, {} leaders and {} local ranks for rank {}", n,
                                  leader_of_rank.size(), local_rank_of_rank.size(), rank));
  for (std::size_t r = 0; r < n; ++r) {
    if (leader_of_rank[r] < 0 || static_cast<std::size_t>(leader_of_rank[r]) >= n)
      throw SystemError(
          fmt::format("layout: rank {} names leader {}, not one of the {} ranks", r, leader_of_rank[r], n));
    if (local_rank_of_rank[r] < 0 || static_cast<std::size_t>(local_rank_of_rank[r]) >= n)
      throw SystemError(
          fmt::format("layout: rank {} names local rank {}, not one of the {} ranks", r, local_rank_of_rank[r], n));
  }
  Layout layout;
  layout.rank = rank;
  layout.ranks = static_cast<int>(n);
  // A node is a shared-memory group, named by its leader's world rank; nodes
  // are numbered by (hostname, leader) so the order is stable across runs.
  std::map<int, std::string> leaders;
  for (std::size_t r = 0; r < leader_of_rank.size(); ++r) {
    const int leader = leader_of_rank[r];
    leaders.emplace(leader, hostname_of_rank[static_cast<std::size_t>(leader)]);
  }
  std::vector<std::pair<std::string, int>> order;
  order.reserve(leaders.size());
  for (const auto& [leader, host] : leaders) order.emplace_back(host, leader);
  std::sort(order.begin(), order.end());
  std::map<int, int> node_of_leader;
  for (std::size_t i = 0; i < order.size(); ++i) {
    node_of_leader[order[i].second] = static_cast<int>(i);
    layout.hostnames.push_back(order[i].first);
  }
  layout.nodes = static_cast<int>(order.size());
  layout.ranks_per_node.assign(order.size(), 0);
  layout.node_of_rank.resize(leader_of_rank.size());
  for (std::size_t r = 0; r < leader_of_rank.size(); ++r) {
    const int node = node_of_leader[leader_of_rank[r]];
    layout.node_of_rank[r] = node;
    ++layout.ranks_per_node[static_cast<std::size_t>(node)];
  }
  layout.node = layout.node_of_rank[static_cast<std::size_t>(rank)];
  layout.local_rank = local_rank_of_rank[static_cast<std::size_t>(rank)];
  layout.local_rank_of_rank = local_rank_of_rank;
  return layout;
}

int rank_at(const Layout& layout, int node, int local_rank) {
  for (std::size_t r = 0; r < layout.node_of_rank.size(); ++r)
    if (layout.node_of_rank[r] == node && layout.local_rank_of_rank[r] == local_rank) return static_cast<int>(r);
  return -1;
}

int uniform_ranks_per_node(const Layout& layout) {
  const int first = layout.ranks_per_node.front();
  for (std::size_t n = 1; n < layout.ranks_per_node.size(); ++n) {
    if (layout.ranks_per_node[n] != first)
      throw UsageError(
          fmt::format("uneven ranks per node ({} has {}, {} has {}): the scaling ladder and the pair "
                      "matrix need the same number of ranks on every node; launch with a fixed count "
                      "per node (mpirun --map-by ppr:N:node)",
                      layout.hostnames.front(), first, layout.hostnames[n], layout.ranks_per_node[n]));
  }
  return first;
}

Layout discover_layout(const Comm& world) {
  const Comm node = world.split_shared();
  const int leader = node.broadcast_value(world.rank(), 0);
  const auto hosts = world.allgather(this_hostname());
  // Each rank's node leader and its rank within the node.
  const std::vector<std::array<int, 2>> places = world.allgather_value(std::array<int, 2>{leader, node.rank()});
  std::vector<int> leaders;
  std::vector<int> locals;
  for (const auto& [their_leader, their_local] : places) {
    leaders.push_back(their_leader);
    locals.push_back(their_local);
  }
  return layout_from(world.rank(), hosts, leaders, locals);
}

}  // namespace fabricbench
