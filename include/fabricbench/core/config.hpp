#pragma once
// RunConfig: everything a run needs, decided once from the command line and
// passed down. No globals.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/core/field_list.hpp"
#include "fabricbench/core/types.hpp"

namespace fabricbench {

enum class TransportChoice { automatic, nccl, mpi };
enum class InPlaceChoice { both, only, no };
enum class ProgressChoice { automatic, on, off };
// The sweep on stdout: fabricbench's table, or exactly nccl-tests' output.
enum class OutputFormat { table, nccl_tests };
// How the headline time of a measurement combines the ranks' own times, as
// nccl-tests' -a: rank 0's, the mean (the default), the fastest or the
// slowest rank's. The mean, min and max are recorded whatever the choice.
enum class RankTime { rank0, mean, min, max };
// What a budgeted run does with the rest of its budget once the quick health
// pass has named a slow host or link (`--on-finding`): keep it all, or keep
// half of what is left (the verdict is known; the rest shows its extent).
enum class OnFinding { keep, halve };
enum class Command { run, sweep, version, scale, p2p, topo, report, storage, help };

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

// A server size and its price per hour (--price GPUS:PRICE,...).
struct ServerPrice {
  int gpus = 0;
  double per_hour = 0;
};

// The scaling ladder (`scale`, part of `run` on several nodes).
struct ScaleConfig {
  std::vector<Op> ops{Op::allreduce, Op::allgather};
  std::size_t bytes = std::size_t{256} << 20;  // capped by mem_cap
  std::size_t mem_cap = std::size_t{2} << 30;  // buffer memory per rank
  bool sweep = false;                          // also a short sweep up to `bytes`
  std::optional<double> nic_gbit_per_node;     // NIC line rate per node, when known
  // Projected data-parallel training, when grad_bytes > 0 (given, or a
  // parameter count times the size of grad_dtype).
  std::size_t grad_bytes = 0;
  DType grad_dtype = DType::bfloat16;
  double compute_ms = 0;
  double overlap = 0;
  bool sharded = false;
  // The GPU-count ladder inside each node (`run` and `scale` with several
  // ranks per node), and the job its projection prices.
  bool gpu_ladder = true;
  std::optional<std::int64_t> steps;       // --steps: training steps per job
  std::vector<ServerPrice> server_prices;  // --price: per server size, ascending
};

// Projected model-parallel training (`run`, `scale`): tensor parallel within
// a node, pipeline parallel across nodes; enabled when tp or pp is above 1.
// The compute time per step is the ladder's (ScaleConfig::compute_ms).
struct ModelParallelConfig {
  int tp = 1;
  int pp = 1;
  std::size_t hidden = 0;
  std::size_t seq = 0;
  std::size_t micro_batch = 1;
  int micro_batches = 1;
  int layers = 0;
  DType dtype = DType::bfloat16;  // of the activations
  [[nodiscard]] bool enabled() const { return tp > 1 || pp > 1; }
};

// The geometric size ladder of a sweep when no explicit sizes are given.
struct SizeRange {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = std::size_t{64} << 20;
  double factor = 2.0;
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

// Placement from the pairs (`p2p`, part of `run` on several nodes): latency
// islands from the pair matrix, and the bisection test.
struct PlacementConfig {
  double island_ratio = 2.0;   // how much slower across islands than within, at least
  int bisection_halvings = 3;  // random halvings; 0: no bisection test
  std::uint64_t bisection_seed = 1;
  double oversubscription_limit = 1.25;  // above this the fabric is named oversubscribed
};

// Shared storage from every node at once (`storage`, part of `run` with
// --storage-path).
struct StorageConfig {
  std::string path;            // the folder; empty: no storage test
  std::size_t file_bytes = 0;  // per file; 0: chosen from the I/O mode and the node's memory
  bool per_node = false;       // one writer per node instead of every rank
  bool buffered = false;       // never O_DIRECT
};

// `p2p --sweep`: the OSU tests over the sweep's sizes between two ranks
// instead of the matrix.
struct P2PSweepConfig {
  bool enabled = false;
  std::vector<int> ranks;  // two world ranks (--ranks), or empty
  std::vector<int> nodes;  // two node indices (--nodes): local rank 0 of each; or empty
  std::vector<P2PTest> tests{P2PTest::latency, P2PTest::bandwidth, P2PTest::bibandwidth};
  SizeRange size_range{1, std::size_t{4} << 20, 2.0};  // osu_latency's 1 B to 4 MiB
  int window = 64;  // messages in flight per iteration of the bandwidth tests, as osu_bw
};

// The NCCL transport's own settings.
struct GpuConfig {
  int gpus = 0;                   // > 0: this many GPUs, one thread each, without a launcher
  bool allow_shared = false;      // several ranks on one GPU (a functional check only)
  bool graph = false;             // capture each batch in a CUDA graph
  double timeout_s = 300;         // every wait on the GPU or a peer
  bool nccl_diagnostics = false;  // NCCL 2.31's own diagnostics, folded into the findings
};

// Decisions on results: gates, references, prices, and the report's own
// outputs (`report`; the gates and prices on the measuring commands too).
struct ReportConfig {
  std::vector<std::string> files;    // report: result files to read
  std::string html_path;             // report: the self-contained HTML page
  std::vector<std::string> expects;  // gate expressions, e.g. "allreduce.busbw>=350"
  bool expect_reference = false;     // gate on the expectations file's verdicts
  // --expectations: a provider's spec file (its path, and its text as read
  // when the options were parsed); its references replace the built-in ones
  // of each figure it gives.
  std::string expectations_path;
  std::string expectations_text;
  bool fail_on_warn = false;  // WARN exits 1
  // --min-scaling-efficiency: the share of 2 nodes' busbw the largest node
  // count must keep (analysis/ladders.hpp).
  double min_scaling_efficiency = 0.8;
  std::optional<double> price_per_gpu_hour;
  std::optional<double> price_per_node_hour;
  std::string currency;  // --currency; empty: USD on a run, the file's on report
  std::string profile;   // "smoke" or empty
};

struct RunConfig {
  Command command = Command::run;
  TransportChoice transport = TransportChoice::automatic;
  std::vector<std::size_t> sizes;  // bytes, ascending, before per-dtype alignment checks
  std::vector<Op> ops{Op::allreduce, Op::allgather, Op::sendrecv};
  std::vector<DType> dtypes{DType::float32};
  std::vector<RedOp> redops{RedOp::sum};
  int root = 0;
  SizeRange size_range;  // the ladder `sizes` came from, unless --sizes listed them
  IterationPolicy iterations;
  RankTime rank_time = RankTime::mean;
  bool check = true;
  bool check_all = false;  // --check-all: every warm-up iteration and the last timed one too
  InPlaceChoice inplace = InPlaceChoice::both;
  std::string json_path;
  std::string csv_path;
  std::string label;  // --label: names the run in its JSON, CSV rows and comparisons
  bool quiet = false;
  OutputFormat format = OutputFormat::table;  // --format
  // NCCL_TESTS_MIN_BW: an op whose mean busbw is below 90% of it fails the
  // run, as in nccl-tests.
  std::optional<double> min_bw_gbs;
  ProgressChoice progress = ProgressChoice::automatic;
  GpuConfig gpu;
  ScaleConfig scale;
  ModelParallelConfig model;
  PairConfig pairs;
  P2PSweepConfig p2p_sweep;
  PlacementConfig placement;
  StorageConfig storage;
  // The topology probe (`topo`, and first in `run`). Empty roots: /sys, /proc.
  std::string sysfs_root;
  std::string procfs_root;
  bool measure_topology = true;  // time host<->device and device<->device copies
  std::vector<std::string> command_line;
  ReportConfig report;
  // The whole run ends within this many seconds (`--budget`); nullopt: no limit.
  std::optional<double> budget_s;
  bool health = true;  // a quick pass over node pairs before the sweep (run, several nodes)
  OnFinding on_finding = OnFinding::keep;
};

std::vector<Placement> placements(InPlaceChoice choice);

// The names of each closed choice of the command line, canonical first: the
// command line parses through them, the help lists them, results name them.
template <typename Enum>
struct ChoiceName {
  std::string_view label;
  Enum value;
};
std::span<const ChoiceName<TransportChoice>> choice_names(TransportChoice);
std::span<const ChoiceName<InPlaceChoice>> choice_names(InPlaceChoice);
std::span<const ChoiceName<ProgressChoice>> choice_names(ProgressChoice);
std::span<const ChoiceName<OutputFormat>> choice_names(OutputFormat);
std::span<const ChoiceName<OnFinding>> choice_names(OnFinding);
// rank0, mean, min, max; also nccl-tests' -a numbers 0, 1, 2, 3.
std::span<const ChoiceName<RankTime>> choice_names(RankTime);

// The first (canonical) name of a value.
template <typename Enum>
std::string_view choice_name(Enum value) {
  for (const auto& [label, v] : choice_names(value))
    if (v == value) return label;
  return "?";
}

// The value named `text` (exactly, as listed), or nullopt.
template <typename Enum>
std::optional<Enum> parse_choice(std::string_view text) {
  for (const auto& [label, v] : choice_names(Enum{}))
    if (label == text) return v;
  return std::nullopt;
}

// ---- field lists (core/field_list.hpp) ------------------------------------

inline std::string_view name(RankTime choice) { return choice_name(choice); }

inline std::optional<RankTime> from_name(std::string_view text, fields::tag<RankTime>) {
  return parse_choice<RankTime>(text);
}

}  // namespace fabricbench
