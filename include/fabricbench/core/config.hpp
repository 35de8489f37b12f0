#pragma once
// RunConfig: everything a run needs, decided once from the command line and
// passed down. No globals.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/core/types.hpp"

namespace fabricbench {

enum class TransportChoice { automatic, nccl, mpi };
enum class InPlaceChoice { both, only, no };
enum class ProgressChoice { automatic, on, off };
enum class Command { run, sweep, version, scale, p2p, topo, report };

struct IterationPolicy {
  int warmup = 5;
  int fixed_iters = 0;        // > 0: exactly this many timed iterations
  double min_time_ms = 20.0;  // adaptive: fill this budget per size and placement
  int min_iters = 5;
  int max_iters = 10000;
  // Past the first batch, more iterations until the mean's relative 95%
  // confidence half-width is within `precision` (0: off), for at most
  // max_time_ms per size and placement (and never past the budget's share).
  double precision = 0.01;
  double max_time_ms = 100.0;
};

// The scaling ladder (`scale`, part of `run` on several nodes).
struct ScaleConfig {
  std::vector<Op> ops{Op::allreduce, Op::allgather};
  std::size_t bytes = std::size_t{256} << 20;  // capped by mem_cap
  std::size_t mem_cap = std::size_t{2} << 30;  // buffer memory per rank
  bool sweep = false;                          // also a short sweep up to `bytes`
  std::optional<double> nic_gbit_per_node;     // NIC line rate per node, when known
  // Projected data-parallel training, when grad_bytes > 0.
  std::size_t grad_bytes = 0;
  double compute_ms = 0;
  double overlap = 0;
  bool sharded = false;
};

// The node-pair matrix (`p2p`, part of `run`).
struct PairConfig {
  std::size_t bytes = std::size_t{64} << 20;  // bandwidth
  std::size_t small_bytes = 8;                // latency
  int sample = 0;                             // rounds to run; 0: all N-1
  // Above full_limit nodes, `peers` rounds of a tournament over the nodes in
  // a random order (the same seed on every rank): linear in N, not quadratic.
  int full_limit = 64;
  int peers = 4;
  unsigned seed = 1;
  double outlier_mads = 4.0;
  double outlier_drop = 0.5;
};

// The NCCL transport's own settings.
struct GpuConfig {
  int gpus = 0;               // > 0: this many GPUs, one thread each, without a launcher
  bool allow_shared = false;  // several ranks on one GPU (a functional check only)
  bool graph = false;         // capture each batch in a CUDA graph
  double timeout_s = 300;     // every wait on the GPU or a peer
};

// Decisions on results: gates, references, prices, and the report's own
// outputs (`report`; the gates and prices on the measuring commands too).
struct ReportConfig {
  std::vector<std::string> files;    // report: result files to read
  std::string html_path;             // report: the self-contained HTML page
  std::vector<std::string> expects;  // gate expressions, e.g. "allreduce.busbw>=350"
  bool expect_reference = false;     // gate on the expectations file's verdicts
  bool fail_on_warn = false;         // WARN exits 1
  std::optional<double> price_per_gpu_hour;
  std::optional<double> price_per_node_hour;
  std::string profile;  // "smoke" or empty
};

struct RunConfig {
  Command command = Command::run;
  TransportChoice transport = TransportChoice::automatic;
  std::vector<std::size_t> sizes;  // bytes, ascending, before per-dtype alignment checks
  std::vector<Op> ops{Op::allreduce, Op::allgather, Op::sendrecv};
  std::vector<DType> dtypes{DType::float32};
  std::vector<RedOp> redops{RedOp::sum};
  int root = 0;
  IterationPolicy iterations;
  bool check = true;
  InPlaceChoice inplace = InPlaceChoice::both;
  std::string json_path;
  std::string csv_path;
  std::string label;  // --label: names the run in its JSON, CSV rows and comparisons
  bool quiet = false;
  ProgressChoice progress = ProgressChoice::automatic;
  GpuConfig gpu;
  ScaleConfig scale;
  PairConfig pairs;
  // The topology probe (`topo`, and first in `run`). Empty roots: /sys, /proc.
  std::string sysfs_root;
  std::string procfs_root;
  bool measure_topology = true;  // time host<->device and device<->device copies
  std::vector<std::string> command_line;
  ReportConfig report;
  // The whole run ends within this many seconds (`--budget`); nullopt: no limit.
  std::optional<double> budget_s;
  bool health = true;  // a quick pass over node pairs before the sweep (run, several nodes)
};

std::vector<Placement> placements(InPlaceChoice choice);

}  // namespace fabricbench
