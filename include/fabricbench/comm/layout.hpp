#pragma once
// Layout: who is on which node. Nodes are found with
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), not by hostname (container
// hostnames collide), and ordered by hostname, then by their first world rank.

#include <string>
#include <vector>

#include "fabricbench/comm/comm.hpp"

namespace fabricbench {

struct Layout {
  int rank = 0;        // world rank
  int ranks = 1;       // world size
  int node = 0;        // this rank's node index
  int local_rank = 0;  // rank within the node
  int nodes = 1;
  std::vector<int> node_of_rank;        // by world rank
  std::vector<int> local_rank_of_rank;  // by world rank
  std::vector<int> ranks_per_node;      // by node index
  std::vector<std::string> hostnames;   // by node index
};

// Collective over `world`.
Layout discover_layout(const Comm& world);

// The part of discovery that is pure logic: from each rank's hostname and the
// world rank that leads its shared-memory group, derive the layout as seen by
// `rank`. Throws SystemError when the lists disagree in length or name a rank
// that does not exist (without MPI they come from files other processes wrote).
Layout layout_from(int rank, const std::vector<std::string>& hostname_of_rank, const std::vector<int>& leader_of_rank,
                   const std::vector<int>& local_rank_of_rank);

std::string this_hostname();

// The world rank of (node, local rank), or -1.
int rank_at(const Layout& layout, int node, int local_rank);

// Ranks per node when every node has the same number; throws UsageError
// naming the nodes otherwise (the ladder and the pair matrix compare nodes
// rail by rail, which needs the same ranks on each).
int uniform_ranks_per_node(const Layout& layout);

}  // namespace fabricbench
