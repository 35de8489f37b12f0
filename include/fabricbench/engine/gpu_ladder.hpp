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
#include "fabricbench/transport/transport.hpp"

namespace fabricbench {

// Which GPUs of a node form a level's set. `any`: every set of that size is
// alike on the link matrix (all NVSwitch, or the whole node); `rank_order`:
// no link matrix to choose by, the first k local ranks.
enum class GpuSetChoice { closest, spread, any, rank_order };
std::string_view name(GpuSetChoice choice);
std::optional<GpuSetChoice> parse_gpu_set_choice(std::string_view text);

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

// What one node's set measured.
struct GpuSetResult {
  int node = 0;
  std::string host;
  std::vector<int> gpus;  // local ranks (= GPU indices on the node)
  std::string path;
  double time_us = 0;
  double busbw_gbs = 0;
  std::uint64_t wrong = 0;
};

struct GpuLevelResult {
  int gpus = 0;
  GpuSetChoice choice = GpuSetChoice::rank_order;
  Op op = Op::allreduce;
  std::size_t bytes = 0;
  std::string path;  // the farthest path over the nodes' sets
  std::vector<GpuSetResult> sets;
  double busbw_min_gbs = 0;
  double busbw_median_gbs = 0;
  // Median busbw over the best pair's (2 GPUs, closest or any, same op and
  // size): busbw is normalised so that a perfect fabric holds it flat as
  // GPUs are added, so the best pair is the ideal every level is held to.
  std::optional<double> efficiency;
};

// One GPU count of the projection, on one choice of set.
struct GpuProjectionPoint {
  int gpus = 0;
  GpuSetChoice choice = GpuSetChoice::any;
  double comm_ms = 0;
  double step_ms = 0;
  double speedup = 0;
  double efficiency = 0;               // speedup / gpus
  std::optional<double> job_hours;     // steps x step time, with --steps
  std::optional<double> cost_per_job;  // job hours x gpus x price per GPU-hour
};

// The job on a whole server of `gpus` GPUs at its price per hour.
struct ServerCost {
  int gpus = 0;
  double price_per_hour = 0;
  std::optional<double> job_hours;
  std::optional<double> cost_per_job;  // job hours x price per hour
  std::string why_not;                 // when the job was not projected at that size
};

struct GpuLadderResult {
  int gpus_per_node = 0;
  std::size_t bytes = 0;
  bool from_topology = false;
  std::string note;
  std::vector<GpuLevelResult> levels;
  std::optional<ProjectionInput> projection_input;
  std::optional<std::int64_t> steps;
  std::vector<GpuProjectionPoint> projection;
  std::optional<double> price_per_gpu_hour;
  std::vector<ServerCost> servers;
  // Over the servers when --price is given, else over the projection's
  // closest (or any) sets: the lowest cost per job, and the shortest job
  // (or step, without --steps). Ties go to fewer GPUs.
  std::optional<int> cheapest_gpus;
  std::optional<int> fastest_gpus;
};

// Fills min/median per level and efficiency against the best pair.
void analyze_gpu_ladder(std::vector<GpuLevelResult>& levels);

// Projection points from the levels measured at input.grad_bytes (all-reduce,
// or reduce-scatter + all-gather when sharded): one GPU (no communication,
// the step is the compute time), then every level and choice.
std::vector<GpuProjectionPoint> project_gpu_levels(const ProjectionInput& input,
                                                   const std::vector<GpuLevelResult>& levels);

// Job hours for `steps` steps of `step_ms`.
double job_hours(std::int64_t steps, double step_ms);

// Job time and cost per job: at each point with `steps`, the cost at
// `per_gpu_hour`; for each priced server size, the cost of the job on the
// point of that many GPUs (closest or any set); then the cheapest and the
// fastest. Pure arithmetic over `result.projection`.
void price_gpu_ladder(GpuLadderResult& result, std::optional<std::int64_t> steps, std::optional<double> per_gpu_hour,
                      const std::vector<ServerPrice>& servers);

// The one label of a level, wherever it is shown: "4 GPUs closest".
std::string gpu_level_label(int gpus, GpuSetChoice choice);

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
