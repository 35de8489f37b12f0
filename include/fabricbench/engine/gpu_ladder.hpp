#pragma once
// The GPU-count ladder inside one server: 2, 4, ... G GPUs of a node (every
// node at once), at each level the closest set of GPUs (same PCIe switch,
// NVLink clique, socket) and the spread set (across switches and sockets)
// where the node's GPU link matrix offers a choice; all-reduce and
// all-gather bus bandwidth of each, and with the training projection the
// step time, job time and cost per job at each GPU count.
//
// A rank stands for a GPU: local rank i drives visible device i, the i-th
// GPU of the node's topology record. Without a usable link matrix (no GPUs
// seen, unknown paths, or a matrix of another size than the ranks per node)
// the sets are the first k local ranks, and the result says so.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/comm/layout.hpp"
#include "fabricbench/core/config.hpp"
#include "fabricbench/core/types.hpp"
#include "fabricbench/engine/multinode.hpp"
#include "fabricbench/engine/scaling.hpp"
#include "fabricbench/records/gpu_ladder.hpp"
#include "fabricbench/transport/transport.hpp"

namespace fabricbench {

// A node's GPU link matrix as the topology probe records it: "X" on the
// diagonal, "NV#", "PIX", "PXB", "PHB", "NODE", "SYS", or "?".
using LinkMatrix = std::vector<std::vector<std::string>>;

// How far apart one matrix cell puts two GPUs, lower is closer: NVLink
// first (more links closer), then PIX < PXB < PHB < NODE < SYS; nullopt for
// a cell that says nothing ("?", "X", anything else).
std::optional<double> path_distance(std::string_view cell);

// The farthest path between any two of `members` as its matrix label
// ("NV12", "PIX", "SYS"), the one that bounds the set; "-" for one GPU.
std::string set_path(const LinkMatrix& matrix, const std::vector<int>& members);

// The GPU counts of the ladder: 2, 4, ... below G, then G, and the `extra`
// counts (server sizes priced with --price) between 2 and G; ascending.
std::vector<int> gpu_ladder_sizes(int gpus_per_node, const std::vector<int>& extra);

// One set of one node.
struct GpuSetPlan {
  int gpus = 0;
  GpuSetChoice choice = GpuSetChoice::rank_order;
  std::vector<int> members;  // local ranks, ascending
  std::string path;          // set_path, or "?" in rank order
};

// The sets every node runs, row by row (all nodes run a row at once).
struct GpuLadderPlan {
  bool from_topology = false;
  std::string note;  // why the sets are in rank order; empty otherwise
  // rows[r][node]: that node's set for row r; every node has the same
  // gpus and choice in a row.
  std::vector<std::vector<GpuSetPlan>> rows;
};

// Plans every node's sets from its link matrix (one per node, in node
// order; an empty matrix when the node's topology is unknown). Rows go by
// GPU count, the closest set before the spread one; a spread row appears
// when any node's matrix offers a set unlike its closest, else the row is
// `any`. One node without a usable matrix puts every node in rank order.
GpuLadderPlan plan_gpu_ladder(const std::vector<LinkMatrix>& matrices, int gpus_per_node,
                              const std::vector<int>& extra_sizes);

// ---- results ---------------------------------------------------------------

// ---- running it ------------------------------------------------------------

// Collective over `world`. `matrices` (one per node) is only read on world
// rank 0, which plans and sends every rank its sets; the results are
// complete on world rank 0. Each row's sets are split from the world
// (Comm::split, then Transport::split: MPI_Comm_split or ncclCommSplit).
// With a limit, world rank 0 shares its seconds out evenly over the
// measurements left and lists what it cut (Phase::gpu_ladder).
GpuLadderResult run_gpu_ladder(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
                               const std::vector<LinkMatrix>& matrices, const PhaseLimit& limit = {});

}  // namespace fabricbench
