#include "fabricbench/app/cli.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "fabricbench/analysis/verdict.hpp"
#include "fabricbench/app/guides.hpp"
#include "fabricbench/core/budget.hpp"
#include "fabricbench/core/byte_strings.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/core/sizes.hpp"
#include "fabricbench/engine/model_parallel.hpp"
#include "fabricbench/output/printer.hpp"

namespace fabricbench {
namespace {

// Every default lives in core's config: the options start from a default
// RunConfig and the help text shows its values.
const RunConfig& defaults() {
  static const RunConfig d;
  return d;
}

// The subcommands and the options each one takes. An option belongs to one
// group below; a group names the subcommands that use it, so a subcommand
// refuses (exit 2) an option it would ignore.
enum Uses : unsigned {
  on_run = 1U << 0U,
  on_sweep = 1U << 1U,
  on_scale = 1U << 2U,
  on_p2p = 1U << 3U,
  on_topo = 1U << 4U,
  on_report = 1U << 5U,
  on_version = 1U << 6U,
  on_storage = 1U << 7U,
  on_help = 1U << 8U,
};
constexpr unsigned measuring = on_run | on_sweep | on_scale | on_p2p;

struct Subcommand {
  const char* name;
  Command command;
  unsigned bit;
  const char* description;
  const char* examples;  // the end of its --help
};

constexpr std::array<Subcommand, 9> subcommands{{
    {"run", Command::run, on_run, "The full suite (default when no subcommand is given)",
     "  mpirun -np 16 fabricbench run --json r.json                 # 2 nodes x 8 GPUs, within 10 minutes\n"
     "  mpirun -np 4 fabricbench run --profile smoke               # the whole suite in a minute\n"
     "  mpirun -np 16 fabricbench run --budget none --price-per-gpu-hour 2.5 --currency EUR"},
    {"sweep", Command::sweep, on_sweep, "Collective sweeps over message sizes",
     "  mpirun -np 8 fabricbench sweep -b 8 -e 1G -f 2 --json r.json\n"
     "  mpirun -np 8 fabricbench sweep --ops allreduce --format nccl-tests   # nccl-tests' output, for its parsers"},
    {"scale", Command::scale, on_scale, "Scaling ladder: bus bandwidth from 1 node to all nodes",
     "  mpirun -np 32 fabricbench scale --scale-bytes 256M --grad-bytes 1G --compute-ms 120"},
    {"p2p", Command::p2p, on_p2p,
     "Node-pair matrix: bandwidth and latency of every node pair, slow nodes; --sweep: OSU latency, bw and bibw "
     "over sizes between two ranks",
     "  mpirun -np 32 fabricbench p2p --json pairs.json             # every node pair, slow nodes named\n"
     "  mpirun -np 2 fabricbench p2p --sweep --tests latency,bw"},
    {"topo", Command::topo, on_topo, "Topology: what is in each node and what differs from its peers",
     "  fabricbench topo --no-measure\n"
     "  mpirun -np 4 fabricbench topo --json topo.json"},
    {"storage", Command::storage, on_storage,
     "Shared storage: every rank (or one per node) writes then reads its own file in --storage-path, all at once",
     "  mpirun -np 8 fabricbench storage --storage-path /shared/scratch --json storage.json"},
    {"report", Command::report, on_report,
     "Read result files: tables, verdicts, cost; compare runs; --csv, --html; gates for CI (no MPI needed)",
     "  fabricbench report r.json --html r.html\n"
     "  fabricbench report before.json after.json                   # compared, grouped by --label\n"
     "  fabricbench report r.json --expect 'allreduce.busbw>=350' --fail-on-warn   # a CI gate"},
    {"version", Command::version, on_version, "Tool version, git hash, transports and library versions",
     "  fabricbench version"},
    {"help", Command::help, on_help, "The guides built into the binary: the topics, or with TOPIC that guide",
     "  fabricbench help budget"},
}};

// nccl-tests' options that have no counterpart here: each is refused with
// what to do instead, rather than as an unknown option.
struct NoEquivalent {
  const char* names;
  const char* why;
};

constexpr std::array<NoEquivalent, 12> no_equivalents{{
    {"-t,--nthreads", "one rank per GPU, launched by mpirun (or --gpus N in one process without a launcher)"},
    {"-g,--ngpus", "one GPU per rank; launch one rank per GPU with mpirun (or --gpus N without a launcher)"},
    {"-i,--stepbytes", "sizes grow by a factor (-f), or list them with --sizes"},
    {"-m,--agg_iters", "every timed iteration is one operation, none are aggregated"},
    {"-N,--run_cycles", "run the command again and compare the files with fabricbench report"},
    {"-p,--parallel_init", "communicators are made once, in parallel on every rank"},
    {"-z,--blocking",
     "batches run back to back and are timed as a whole; each iteration's own time comes from per-iteration stamps "
     "(p50, p99)"},
    {"-y,--stream_null", "each rank runs on a stream of its own"},
    {"-C,--report_cputime", "times are GPU event times (nccl) or MPI_Wtime (mpi)"},
    {"-R,--local_register", "buffers are not registered with NCCL"},
    // nccl-tests' -J writes its own JSON layout; a parser of that layout would
    // misread fabricbench's, so -J is not an alias of --json.
    {"-J,--output_file",
     "nccl-tests' JSON layout is not written; --json FILE writes fabricbench's JSON (--format nccl-tests prints "
     "nccl-tests' table)"},
    {"-F", "it is no nccl-tests option either; --csv FILE writes the sweep's records as CSV"},
}};

constexpr std::array<const char*, 1> profiles{"smoke"};

// "8", "64M", "2G": a size as one types it.
std::string size_text(std::size_t bytes) {
  for (const auto& [shift, unit] :
       {std::pair{40U, 'T'}, std::pair{30U, 'G'}, std::pair{20U, 'M'}, std::pair{10U, 'K'}}) {
    const std::size_t multiple = std::size_t{1} << shift;
    if (bytes >= multiple && bytes % multiple == 0) return fmt::format("{}{}", bytes >> shift, unit);
  }
  return std::to_string(bytes);
}

template <typename Values>
std::string names_of(const Values& values) {
  std::vector<std::string> labels;
  for (const auto& v : values) labels.emplace_back(name(v));
  return fmt::format("{}", fmt::join(labels, ","));
}

// The canonical names of a closed choice, "a, b, c".
template <typename Enum>
std::string choices_of() {
  std::vector<std::string_view> labels;
  for (const auto& entry : choice_names(Enum{})) {
    // A named copy: clang before 16 cannot capture a structured binding.
    const Enum value = entry.value;
    if (std::find_if(labels.begin(), labels.end(),
                     [&](std::string_view l) { return parse_choice<Enum>(l) == value; }) == labels.end())
      labels.push_back(entry.label);
  }
  return fmt::format("{}", fmt::join(labels, ", "));
}

// Help text with its default, "...  [5]".
template <typename T>
std::string with_default(std::string_view help, const T& value) {
  return fmt::format("{}  [{}]", help, value);
}

// Flags as typed, validated after CLI11 has split them so that every error is
// one line naming the flag and the value. They start at the defaults.
struct RawOptions {
  std::string transport{choice_name(defaults().transport)};
  std::string min_bytes;  // empty: the command's default range
  std::string max_bytes;
  std::optional<double> step_factor;  // unset: the command's default range
  std::string sizes;
  std::string ops;  // empty: the default list
  std::string dtypes;
  std::string redops;
  int root = defaults().root;
  int warmup = defaults().iterations.warmup;
  int iters = defaults().iterations.fixed_iters;
  double min_time_ms = defaults().iterations.min_time_ms;
  int min_iters = defaults().iterations.min_iters;
  int max_iters = defaults().iterations.max_iters;
  double precision_pct = defaults().iterations.precision * 100.0;
  double max_time_ms = defaults().iterations.max_time_ms;
  std::string budget;  // empty: no budget
  bool no_health = !defaults().health;
  std::string on_finding{choice_name(defaults().on_finding)};
  // --check, --no-check and -c N each say whether to check, in the order
  // the options are defined: two that disagree are refused.
  std::vector<std::pair<std::string, bool>> check_votes;
  bool check_all = false;
  std::string rank_time{choice_name(defaults().rank_time)};
  std::string inplace{choice_name(defaults().inplace)};
  std::string json;
  std::string csv;
  std::string label;
  bool quiet = false;
  std::string format{choice_name(defaults().format)};
  std::string progress{choice_name(defaults().progress)};
  // NCCL transport.
  int gpus = defaults().gpu.gpus;
  bool allow_shared_gpu = defaults().gpu.allow_shared;
  bool nccl_diagnostics = false;
  bool graph = defaults().gpu.graph;
  int graph_launches = 0;  // -G N, as nccl-tests
  double timeout_s = defaults().gpu.timeout_s;
  // Scaling ladder.
  std::string scale_ops;
  std::string scale_bytes;
  std::string mem_cap;
  bool scale_sweep = defaults().scale.sweep;
  double nic_gbit = 0;
  std::string grad_bytes;
  double params = 0;
  std::string grad_dtype{name(defaults().scale.grad_dtype)};
  double compute_ms = defaults().scale.compute_ms;
  double overlap = defaults().scale.overlap;
  bool sharded = defaults().scale.sharded;
  // Model-parallel projection.
  int tp = defaults().model.tp;
  int pp = defaults().model.pp;
  std::int64_t hidden = 0;
  std::int64_t seq = 0;
  std::int64_t micro_batch = static_cast<std::int64_t>(defaults().model.micro_batch);
  int micro_batches = defaults().model.micro_batches;
  int layers = defaults().model.layers;
  std::string act_dtype{name(defaults().model.dtype)};
  // GPU-count ladder inside a node.
  bool no_gpu_ladder = false;
  std::string steps;
  std::string server_prices;
  // Pair matrix.
  std::string pair_bytes;
  std::string pair_small_bytes;
  std::string pairs = "all";
  int pair_full_limit = defaults().pairs.full_limit;
  int pair_peers = defaults().pairs.peers;
  unsigned pair_seed = defaults().pairs.seed;
  double outlier_mads = defaults().pairs.outlier_mads;
  double outlier_drop = defaults().pairs.outlier_drop;
  // p2p --sweep.
  bool p2p_sweep = false;
  std::string p2p_ranks;
  std::string p2p_nodes;
  std::string p2p_tests;
  int window = defaults().p2p_sweep.window;
  // Topology probe.
  std::string sysfs_root;
  std::string procfs_root;
  bool no_measure = false;
  // Decisions: gates, references, prices (run and report), report outputs.
  std::vector<std::string> expects;
  bool expect_reference = false;
  std::string expectations;
  bool fail_on_warn = false;
  double min_scaling_efficiency_pct = defaults().report.min_scaling_efficiency * 100;
  std::string currency;
  std::optional<double> price_per_gpu_hour;
  std::optional<double> price_per_node_hour;
  std::string profile;
  std::vector<std::string> files;
  std::string html;
  // Placement (islands, bisection) and storage.
  double island_ratio = defaults().placement.island_ratio;
  int bisection_halvings = defaults().placement.bisection_halvings;
  std::uint64_t bisection_seed = defaults().placement.bisection_seed;
  double oversubscription_limit = defaults().placement.oversubscription_limit;
  std::string storage_path;
  std::string file_bytes;
  bool storage_per_node = defaults().storage.per_node;
  bool storage_buffered = defaults().storage.buffered;
  std::string ignored;  // the values of nccl-tests' options refused below
  std::string help_topic;
};

// --- The option groups: each adds its options to one subcommand. ----------

void add_size_options(CLI::App& cmd, RawOptions& o, Command command) {
  const SizeRange& range = command == Command::p2p ? defaults().p2p_sweep.size_range : defaults().size_range;
  const char* prefix = command == Command::p2p ? "--sweep: " : "";
  cmd.add_option("-b,--min-bytes", o.min_bytes,
                 with_default(fmt::format("{}Smallest message size: bytes, or a binary suffix K, M, G or KiB, MiB, "
                                          "GiB (1K = 1KiB = 1024 B; 1KB and 1MB are refused as ambiguous)",
                                          prefix),
                              size_text(range.min_bytes)));
  cmd.add_option("-e,--max-bytes", o.max_bytes,
                 with_default(fmt::format("{}Largest message size", prefix), size_text(range.max_bytes)));
  cmd.add_option("-f,--step-factor", o.step_factor,
                 with_default(fmt::format("{}Multiply the size by this between steps (> 1)", prefix), range.factor));
  cmd.add_option("--sizes", o.sizes,
                 fmt::format("{}Explicit sizes, comma separated, e.g. 8,1K,64M (instead of -b/-e/-f)", prefix));
}

void add_collective_options(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_option("--ops", o.ops,
                 with_default(fmt::format("Operations, comma separated: {}, or all", names_of(all_ops())),
                              names_of(defaults().ops)));
  cmd.add_option("-d,--dtype", o.dtypes,
                 with_default(fmt::format("Element types, comma separated: {}, or all", names_of(all_dtypes())),
                              names_of(defaults().dtypes)));
  cmd.add_option(
      "-o,--redop", o.redops,
      with_default(fmt::format("Reductions, comma separated: {}, or all (avg: nccl only)", names_of(all_redops())),
                   names_of(defaults().redops)));
  cmd.add_option("-r,--root", o.root, with_default("Root rank of broadcast and reduce", defaults().root));
  cmd.add_option("--inplace", o.inplace,
                 with_default(fmt::format("Placements to measure: {}", choices_of<InPlaceChoice>()), o.inplace));
}

void add_sweep_output_options(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_option("--progress", o.progress,
                 with_default(fmt::format("Progress line on stderr: {} (auto: when stderr is a terminal and without "
                                          "-q); under mpirun the ranks' stderr is a pipe, so pass on to see it; "
                                          "off also silences run's line per phase",
                                          choices_of<ProgressChoice>()),
                              o.progress));
  cmd.add_option("--csv", o.csv,
                 "Write the sweep's records as CSV to FILE, and each other section the run holds beside it "
                 "(FILE.ladder.csv, FILE.pairs.csv, ...)");
}

void add_iteration_options(CLI::App& cmd, RawOptions& o, Command) {
  const IterationPolicy& d = defaults().iterations;
  cmd.add_option("-w,--warmup", o.warmup, with_default("Warm-up iterations before each measurement", d.warmup));
  cmd.add_option("-n,--iters", o.iters, "Fixed number of timed iterations (default: adaptive)");
  cmd.add_option("--min-time-ms", o.min_time_ms,
                 with_default("Adaptive iterations: time to fill per size and placement", d.min_time_ms));
  cmd.add_option("--min-iters", o.min_iters, with_default("Adaptive iterations: lower bound", d.min_iters));
  cmd.add_option("--max-iters", o.max_iters, with_default("Adaptive iterations: upper bound", d.max_iters));
  cmd.add_option("--precision", o.precision_pct,
                 with_default("Adaptive iterations: add iterations until the mean's 95% confidence half-width is "
                              "within this percentage (0: off)",
                              o.precision_pct));
  cmd.add_option(
      "--max-time-ms", o.max_time_ms,
      with_default("Adaptive iterations: time one size and placement may take to reach --precision", d.max_time_ms));
  cmd.add_flag(
      "--check", [&o](std::int64_t) { o.check_votes.emplace_back("--check", true); },
      fmt::format("Verify every result element of each point's first iteration{}",
                  defaults().check ? " (on by default)" : ""));
  cmd.add_flag("--check-all", o.check_all,
               "Exhaustive data check: verify every warm-up iteration and the last timed one too, not only the "
               "first");
  cmd.add_flag(
      "--no-check", [&o](std::int64_t) { o.check_votes.emplace_back("--no-check", false); },
      "Skip the data check (the result's data_ok is then null)");
  cmd.add_option_function<int>(
      "-c",
      [&o](const int& n) {
        if (n < 0) throw UsageError(fmt::format("-c {}: must be 0 (no check) or above", n));
        o.check_votes.emplace_back(fmt::format("-c {}", n), n > 0);
        if (n > 1) o.check_all = true;
      },
      "nccl-tests' -c: 0 skips the data check, 1 checks the first iteration, 2 or more as --check-all");
}

void add_rank_time_option(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_option("-a,--rank-time", o.rank_time,
                 with_default(fmt::format("The headline time over ranks: rank0, mean, min or max (nccl-tests' -a 0, "
                                          "1, 2, 3); min and max are recorded too"),
                              o.rank_time));
}

void add_transport_options(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_option("--transport", o.transport,
                 with_default(fmt::format("{} (auto: nccl when built with it and a GPU is visible)",
                                          choices_of<TransportChoice>()),
                              o.transport));
  cmd.add_option("--gpus", o.gpus, "nccl without a launcher: drive this many local GPUs, one thread each");
  cmd.add_flag("--allow-shared-gpu", o.allow_shared_gpu,
               "nccl: allow several ranks on one GPU (a functional check only: they measure each other)");
  cmd.add_flag("--graph", o.graph, "nccl: capture each timed batch in a CUDA graph");
  cmd.add_flag("--nccl-diagnostics", o.nccl_diagnostics,
               "nccl: run NCCL's own diagnostics (NCCL 2.31 and newer) as the communicators are made and fold "
               "their lines into the findings");
  cmd.add_option("-G", o.graph_launches, "nccl-tests' -G N: any N above 0 is --graph (each timed batch is one graph)");
  cmd.add_option(
      "-T,--timeout", o.timeout_s,
      with_default("Seconds any wait on the GPU or a peer may take before the run aborts", defaults().gpu.timeout_s));
}

void add_output_options(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_option("--json", o.json, "Write the results as JSON to FILE (rewritten as the run goes)");
  cmd.add_flag("-q,--quiet", o.quiet, "Print no table, only the summary and errors");
}

// nccl-tests' output (its -J is refused with what to use: see no_equivalents).
void add_nccl_tests_options(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_option("--format", o.format,
                 with_default(fmt::format("The sweep on stdout: {} (nccl-tests: exactly nccl-tests' rows and `#` "
                                          "lines, for its parsers)",
                                          choices_of<OutputFormat>()),
                              o.format));
}

void add_budget_option(CLI::App& cmd, RawOptions& o, Command command) {
  cmd.add_option("--budget", o.budget,
                 fmt::format("End the whole run within DURATION (e.g. 90s, 5m; none: no bound): phases get shares; "
                             "what does not fit is cut and listed  [{}]",
                             command == Command::run ? fmt::format("{}; 60s with --profile smoke", default_run_budget)
                                                     : std::string("none")));
}

void add_health_option(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_flag("--no-health", o.no_health, "Skip the quick pass over node pairs before the sweep (several nodes)");
  cmd.add_option("--on-finding", o.on_finding,
                 with_default(fmt::format("With --budget, once the quick pass names a slow host or link: {} the rest "
                                          "of the budget (halve: the verdict is known, half of what is left shows its "
                                          "extent; the default with --profile smoke)",
                                          choices_of<OnFinding>()),
                              o.on_finding));
}

void add_label_option(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_option("--label", o.label,
                 "Name this run (e.g. the provider): saved in the JSON, on every CSV row and in comparisons")
      ->check([](const std::string& value) {
        return is_utf8(value) ? std::string() : std::string("not UTF-8 text: a label is shown and compared as text");
      });
}

void add_topology_options(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_option("--sysfs-root", o.sysfs_root, "Read sysfs from DIR instead of /sys (fixtures, containers)")
      ->envname("FABRICBENCH_SYSFS_ROOT");
  cmd.add_option("--procfs-root", o.procfs_root,
                 "Read procfs from DIR instead of /proc; os-release then comes from DIR/../etc")
      ->envname("FABRICBENCH_PROCFS_ROOT");
  cmd.add_flag("--no-measure", o.no_measure, "Topology: skip the host<->device and device<->device copy bandwidths");
}

void add_scale_options(CLI::App& cmd, RawOptions& o, Command) {
  const ScaleConfig& d = defaults().scale;
  cmd.add_option("--scale-ops", o.scale_ops, with_default("Ladder operations, comma separated", names_of(d.ops)));
  cmd.add_option("--scale-bytes", o.scale_bytes,
                 with_default("Ladder message size, capped by --mem-cap", size_text(d.bytes)));
  cmd.add_option("--mem-cap", o.mem_cap,
                 with_default("Buffer memory per rank the ladder may use", size_text(d.mem_cap)));
  cmd.add_flag("--scale-sweep", o.scale_sweep, "Also run a short size sweep at every ladder level");
  cmd.add_option("--nic-gbit-per-node", o.nic_gbit, "NIC line rate per node in Gb/s, for the NIC-bound ceiling");
  cmd.add_option("--grad-bytes", o.grad_bytes, "Projection: gradient bytes all-reduced per training step");
  cmd.add_option("--params", o.params, "Projection: parameter count (with --grad-dtype) instead of --grad-bytes");
  cmd.add_option("--grad-dtype", o.grad_dtype, with_default("Projection: gradient element type", o.grad_dtype));
  cmd.add_option("--compute-ms", o.compute_ms, "Projection: compute time per step on one GPU, in ms");
  cmd.add_option("--overlap", o.overlap,
                 with_default("Projection: fraction of compute that hides communication, 0..1", d.overlap));
  cmd.add_flag("--sharded", o.sharded, "Projection: sharded data parallel (reduce-scatter + all-gather)");
}

void add_model_parallel_options(CLI::App& cmd, RawOptions& o, Command) {
  const ModelParallelConfig& d = defaults().model;
  cmd.add_option("--tp", o.tp, with_default("Projection: tensor-parallel ranks, within a node", d.tp));
  cmd.add_option("--pp", o.pp, with_default("Projection: pipeline stages, across nodes (run)", d.pp));
  cmd.add_option("--hidden", o.hidden, "Projection (--tp/--pp): hidden size of the model");
  cmd.add_option("--seq", o.seq, "Projection (--tp/--pp): sequence length");
  cmd.add_option("--micro-batch", o.micro_batch,
                 with_default("Projection (--tp/--pp): sequences per micro-batch", d.micro_batch));
  cmd.add_option("--micro-batches", o.micro_batches,
                 with_default("Projection (--tp/--pp): micro-batches per step (pipeline bubble)", d.micro_batches));
  cmd.add_option("--layers", o.layers, "Projection (--tp/--pp): transformer layers");
  cmd.add_option("--act-dtype", o.act_dtype,
                 with_default("Projection (--tp/--pp): activation element type", o.act_dtype));
}

void add_gpu_ladder_options(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_flag("--no-gpu-ladder", o.no_gpu_ladder,
               "Skip the GPU-count ladder inside each node (it runs when a node has several ranks)");
  cmd.add_option("--steps", o.steps, "GPU ladder projection: training steps per job, for the job time and its cost");
  cmd.add_option("--price", o.server_prices,
                 "GPU ladder projection: price per hour of a whole server by its GPU count, e.g. 4:4,8:8 (any "
                 "currency): the job's cost on each server size, the cheapest and the fastest");
}

void add_pair_options(CLI::App& cmd, RawOptions& o, Command) {
  const PairConfig& d = defaults().pairs;
  cmd.add_option("--pair-bytes", o.pair_bytes,
                 with_default("Pair matrix: message size for bandwidth", size_text(d.bytes)));
  cmd.add_option("--pair-small-bytes", o.pair_small_bytes,
                 with_default("Pair matrix: message size for latency", size_text(d.small_bytes)));
  cmd.add_option("--pairs", o.pairs, with_default("Pair rounds: all, or sample:K for K of the N-1 rounds", o.pairs));
  cmd.add_option(
      "--pair-full-limit", o.pair_full_limit,
      with_default("Above this many nodes, each node meets --pair-peers random others instead of all", d.full_limit));
  cmd.add_option("--pair-peers", o.pair_peers,
                 with_default("Random pair rounds above --pair-full-limit nodes", d.peers));
  cmd.add_option("--pair-seed", o.pair_seed,
                 with_default("Seed of the random node order above --pair-full-limit (not 0)", d.seed));
  cmd.add_option("--outlier-mads", o.outlier_mads,
                 with_default("Findings: scaled MADs below the median to flag (with 6 links or more)", d.outlier_mads));
  cmd.add_option("--outlier-drop", o.outlier_drop,
                 with_default("Findings: fraction below the median to flag, 0..1", d.outlier_drop));
}

void add_p2p_sweep_options(CLI::App& cmd, RawOptions& o, Command) {
  const P2PSweepConfig& d = defaults().p2p_sweep;
  cmd.add_flag("--sweep", o.p2p_sweep,
               "The OSU point-to-point tests over a size ladder between two ranks (instead of the pair matrix): "
               "latency (ping-pong, half the round trip), bw (a window of messages one way), bibw (both ways)");
  cmd.add_option("--ranks", o.p2p_ranks,
                 "--sweep: the two world ranks, e.g. 0,1 (default: rank 0 and the first rank on another node)");
  cmd.add_option("--nodes", o.p2p_nodes, "--sweep: two node indices, e.g. 0,3: local rank 0 of each");
  cmd.add_option(
      "--tests", o.p2p_tests,
      with_default(fmt::format("--sweep: tests, comma separated: {}", names_of(all_p2p_tests())), names_of(d.tests)));
  cmd.add_option("--window", o.window,
                 with_default("--sweep: messages in flight per iteration of bw and bibw", d.window));
}

void add_gate_options(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_option("--expect", o.expects,
                 "Gate, repeatable: SUBJECT.METRIC[@ARG]CMP VALUE, e.g. 'allreduce.busbw>=350', "
                 "'allgather.busbw@64M>=100', 'scale.efficiency@2>=0.9', 'topo.h2d_gbs>=40' (failing: exit 3)");
  cmd.add_flag("--expect-reference", o.expect_reference,
               "Gate on the built-in reference figures for the detected hardware (FAIL: exit 3; no reference: WARN)");
  cmd.add_option("--expectations", o.expectations,
                 "A provider's spec file (fabricbench.expectations/2 JSON, as src/data/expectations.json): its "
                 "references replace the built-in ones of each figure it gives");
  cmd.add_flag("--fail-on-warn", o.fail_on_warn, "Exit 1 when the verdict is WARN");
  cmd.add_option("--min-scaling-efficiency", o.min_scaling_efficiency_pct,
                 with_default("Scaling: WARN when the busbw of the largest node count is below PCT% of 2 nodes' "
                              "(a ladder to 3 or more nodes)",
                              o.min_scaling_efficiency_pct));
  cmd.add_option("--price-per-gpu-hour", o.price_per_gpu_hour,
                 "Price of one GPU for an hour, for the cost (in --currency)");
  cmd.add_option("--price-per-node-hour", o.price_per_node_hour,
                 "Price of one node for an hour, for the cost (in --currency)");
  cmd.add_option("--currency", o.currency,
                 "The prices' currency, an ISO 4217 code shown with every cost  [USD; report: the file's]");
}

void add_profile_option(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_option("--profile", o.profile,
                 "smoke: a short suite for CI (16 B..16 MiB x4; allreduce, allgather, sendrecv; 5 ms per size; "
                 "data checked; ladder and pairs at 4 MiB; a 60 s --budget, --on-finding halve)");
}

void add_topo_output_options(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_option("--json", o.json, "Write the result, with its topology section, as JSON to FILE");
  cmd.add_flag("-q,--quiet", o.quiet, "Print nothing but errors");
}

void add_report_options(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_option("files", o.files, "Result JSON files (several: compared; same cluster: aggregated)")->required();
  cmd.add_option("--csv", o.csv,
                 "Write CSV to FILE (one file: its records, and its sections beside it as run --csv writes them; "
                 "several: the comparison, one row per point and group)");
  cmd.add_option("--html", o.html, "Write a self-contained HTML page with charts to FILE");
  cmd.add_flag("-q,--quiet", o.quiet, "Print only the verdict line and errors");
}

void add_no_equivalents(CLI::App& cmd, RawOptions& o, Command) {
  for (const NoEquivalent& n : no_equivalents) cmd.add_option(n.names, o.ignored)->expected(0, 1)->group("");
}

void add_placement_options(CLI::App& cmd, RawOptions& o, Command) {
  const PlacementConfig& d = defaults().placement;
  cmd.add_option(
      "--island-ratio", o.island_ratio,
      with_default("Latency islands: how many times slower across islands than within, at least", d.island_ratio));
  cmd.add_option("--bisection-halvings", o.bisection_halvings,
                 with_default("Bisection test (4 or more nodes; not with --budget): random halvings; 0: none",
                              d.bisection_halvings));
  cmd.add_option("--bisection-seed", o.bisection_seed,
                 with_default("Bisection test: seed of the halvings (the same on every rank)", d.bisection_seed));
  cmd.add_option("--oversubscription-limit", o.oversubscription_limit,
                 with_default("Bisection test: name the fabric oversubscribed above this isolated:loaded ratio",
                              d.oversubscription_limit));
}

void add_storage_options(CLI::App& cmd, RawOptions& o, Command command) {
  CLI::Option* path =
      cmd.add_option("--storage-path", o.storage_path,
                     command == Command::storage ? "Folder to test (shared by the nodes, or each node's own)"
                                                 : "Also test the storage in this folder, from every node at once");
  if (command == Command::storage) path->required();
  cmd.add_option("--file-bytes", o.file_bytes,
                 "Storage: bytes per file (default: 1G with O_DIRECT, else twice each writer's share of the node's "
                 "memory, at least 1G)");
  cmd.add_flag("--storage-per-node", o.storage_per_node, "Storage: one writer per node instead of every rank");
  cmd.add_flag("--storage-buffered", o.storage_buffered,
               "Storage: never O_DIRECT (buffered I/O, fsync, cached pages dropped before reading)");
}

void add_storage_command_options(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_option("--json", o.json, "Write the results as JSON to FILE");
  cmd.add_flag("-q,--quiet", o.quiet, "Print no table, only the summary and errors");
  cmd.add_option("-T,--timeout", o.timeout_s,
                 with_default("Seconds any wait on a peer or the storage may take before the run aborts",
                              defaults().gpu.timeout_s));
}

void add_help_options(CLI::App& cmd, RawOptions& o, Command) {
  cmd.add_option("topic", o.help_topic, "The guide to print (without a topic: the list)");
}

struct OptionGroup {
  unsigned uses;
  void (*add)(CLI::App&, RawOptions&, Command);
  // The heading its options are listed under in --help: what they are for,
  // in one line, and the guide that says the rest ("" for positionals).
  const char* heading;
};

// Adding an option: one line in its group's function above (and its field
// in RunConfig, whose default the help then shows).
constexpr const char* sizes_heading = "What is measured: sizes, ops, types (fabricbench help method)";
constexpr const char* timing_heading = "How long each point is timed (fabricbench help method)";
constexpr const char* budget_heading = "A run that ends: budget, profile, health pass (fabricbench help budget)";
constexpr const char* gpu_heading = "Transport, GPUs and deadlines (fabricbench help nccl, help safety)";
constexpr const char* output_heading = "Output: table, JSON, CSV, labels (fabricbench help reports)";
constexpr const char* multinode_heading =
    "Across nodes: ladders, projections, node pairs, placement (fabricbench help multinode, help gpu-ladder)";
constexpr const char* verdict_heading = "Verdicts, gates and cost (fabricbench help reports)";

constexpr std::array<OptionGroup, 25> option_groups{{
    {on_run | on_sweep | on_p2p, add_size_options, sizes_heading},
    {on_run | on_sweep, add_collective_options, sizes_heading},
    {on_run | on_sweep, add_sweep_output_options, output_heading},
    {measuring, add_iteration_options, timing_heading},
    {measuring, add_budget_option, budget_heading},
    {on_run, add_health_option, budget_heading},
    {on_run | on_sweep | on_scale, add_rank_time_option, timing_heading},
    {measuring, add_transport_options, gpu_heading},
    {measuring, add_output_options, output_heading},
    {on_run | on_sweep, add_nccl_tests_options, output_heading},
    {measuring | on_storage, add_label_option, output_heading},
    {on_run | on_topo, add_topology_options, "Topology probe (fabricbench help topology)"},
    {on_run | on_scale, add_scale_options, multinode_heading},
    {on_run | on_scale, add_model_parallel_options, multinode_heading},
    {on_run | on_scale, add_gpu_ladder_options, multinode_heading},
    {on_run | on_p2p, add_pair_options, multinode_heading},
    {on_p2p, add_p2p_sweep_options, "Between two ranks: the OSU-style tests (fabricbench help commands)"},
    {measuring | on_report | on_storage, add_gate_options, verdict_heading},
    {on_run, add_profile_option, budget_heading},
    {on_topo, add_topo_output_options, output_heading},
    {on_report, add_report_options, output_heading},
    {on_run | on_p2p, add_placement_options, multinode_heading},
    {on_run | on_storage, add_storage_options, "Shared storage (fabricbench help storage)"},
    {on_storage, add_storage_command_options, output_heading},
    {on_help, add_help_options, ""},
}};
constexpr OptionGroup no_equivalent_group{measuring, add_no_equivalents, ""};

// --- Turning what was typed into a config. ---------------------------------

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    items.push_back(item);
  }
  return items;
}

template <typename T, typename Parse, typename Names>
std::vector<T> parse_list(const std::string& flag, const std::string& text, Parse parse, const Names& choices,
                          const char* what) {
  std::vector<T> out;
  if (text == "all") return std::vector<T>(choices.begin(), choices.end());
  for (const std::string& item : split_list(text)) {
    const std::optional<T> value = parse(item);
    if (!value) {
      std::vector<std::string> labels;
      for (const T& c : choices) labels.emplace_back(name(c));
      throw UsageError(fmt::format("{}: unknown {} '{}' (choose from {})", flag, what, item, fmt::join(labels, ", ")));
    }
    if (std::find(out.begin(), out.end(), *value) == out.end()) out.push_back(*value);
  }
  if (out.empty()) throw UsageError(fmt::format("{}: no {} given", flag, what));
  return out;
}

template <typename Enum>
Enum parse_choice_flag(const std::string& flag, const std::string& text, const char* what = "choice") {
  if (const auto value = parse_choice<Enum>(text)) return *value;
  throw UsageError(fmt::format("{}: unknown {} '{}' (choose from {})", flag, what, text, choices_of<Enum>()));
}

// Whether `flag` was given to `cmd` (false for an option `cmd` does not have).
bool given(const CLI::App& cmd, const char* flag) {
  const CLI::Option* opt = cmd.get_option_no_throw(flag);
  return opt != nullptr && opt->count() > 0;
}

// Two whole numbers, "A,B".
std::vector<int> parse_pair(const std::string& flag, const std::string& text, const char* what) {
  std::vector<int> out;
  for (const std::string& item : split_list(text)) {
    const bool digits = !item.empty() && item.find_first_not_of("0123456789") == std::string::npos && item.size() < 9;
    if (!digits) throw UsageError(fmt::format("{}: '{}' is not a {} (a whole number, 0 or above)", flag, item, what));
    out.push_back(std::stoi(item));
  }
  if (out.size() != 2) throw UsageError(fmt::format("{} {}: give two {}s, e.g. 0,1", flag, text, what));
  return out;
}

std::size_t size_value(const std::string& flag, const std::string& text) {
  const auto value = parse_size(text);
  if (!value) throw UsageError(fmt::format("{}: {}", flag, size_error(text)));
  if (*value == 0) throw UsageError(fmt::format("{}: the size must be above 0", flag));
  if (*value > max_message_bytes)
    throw UsageError(
        fmt::format("{} {}: above the largest message size, {}", flag, text, format_size(max_message_bytes)));
  return *value;
}

// A value given as "" would silently mean the default (`--sizes ""`,
// `--json ""`): every option that takes a value must get one.
void refuse_empty_values(const CLI::App& cmd) {
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->count() == 0 || opt->get_type_size() == 0 || opt->get_group().empty()) continue;
    for (const std::string& value : opt->results())
      if (value.empty()) throw UsageError(fmt::format("{}: empty value", opt->get_name()));
  }
}

std::size_t widest_element(const std::vector<DType>& dtypes) {
  std::size_t widest = 1;
  for (const DType d : dtypes) widest = std::max(widest, element_size(d));
  return widest;
}

void require_whole_elements(const std::string& flag, std::size_t bytes, const std::vector<DType>& dtypes) {
  for (const DType d : dtypes) {
    if (bytes % element_size(d) != 0)
      throw UsageError(fmt::format("{}: {} B is not a whole number of {} elements ({} B each)", flag, bytes, name(d),
                                   element_size(d)));
  }
}

// The sizes: --sizes, or the ladder of -b/-e/-f over `range`'s defaults, in
// whole elements of every type in `dtypes`.
// Sets `range` to the ladder the sizes came from (factor 0: a --sizes list).
std::vector<std::size_t> parse_sizes(const RawOptions& o, SizeRange& range, const std::vector<DType>& dtypes) {
  std::vector<std::size_t> sizes;
  const bool step_given = o.step_factor.has_value();
  if (!o.sizes.empty()) {
    if (!o.min_bytes.empty() || !o.max_bytes.empty() || step_given)
      throw UsageError("--sizes: cannot be combined with -b/--min-bytes, -e/--max-bytes or -f/--step-factor");
    for (const std::string& item : split_list(o.sizes)) {
      const std::size_t bytes = size_value("--sizes", item);
      require_whole_elements("--sizes", bytes, dtypes);
      sizes.push_back(bytes);
    }
    if (sizes.size() > max_ladder_sizes)
      throw UsageError(
          fmt::format("--sizes: {} sizes, more than the {} one sweep may have", sizes.size(), max_ladder_sizes));
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    range = SizeRange{sizes.front(), sizes.back(), 0.0};
    return sizes;
  }
  const std::string min_text = o.min_bytes.empty() ? size_text(range.min_bytes) : o.min_bytes;
  const std::string max_text = o.max_bytes.empty() ? size_text(range.max_bytes) : o.max_bytes;
  const double factor = o.step_factor.value_or(range.factor);
  const std::size_t lo = size_value("-b/--min-bytes", min_text);
  const std::size_t hi = size_value("-e/--max-bytes", max_text);
  if (lo > hi) throw UsageError(fmt::format("-b/--min-bytes {} is above -e/--max-bytes {}", min_text, max_text));
  if (!(factor > 1.0)) throw UsageError(fmt::format("-f/--step-factor {} must be above 1", factor));
  if (!std::isfinite(factor))
    throw UsageError(fmt::format("-f/--step-factor {} must be a finite number above 1", factor));
  require_whole_elements("-b/--min-bytes", lo, dtypes);
  require_whole_elements("-e/--max-bytes", hi, dtypes);
  std::vector<std::size_t> ladder = size_ladder(lo, hi, factor, widest_element(dtypes));
  range = SizeRange{lo, hi, factor};
  if (ladder.size() > max_ladder_sizes)
    throw UsageError(
        fmt::format("-f/--step-factor {}: the ladder from {} to {} would have more than {} sizes; use a "
                    "larger factor or --sizes",
                    factor, min_text, max_text, max_ladder_sizes));
  return ladder;
}

void apply_decision_options(const RawOptions& o, ReportConfig& report) {
  report.expects = o.expects;
  report.expect_reference = o.expect_reference;
  if (!o.expectations.empty()) {
    std::ifstream in(o.expectations, std::ios::binary);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    if (!in || in.bad())
      throw UsageError(fmt::format("--expectations {}: cannot be read ({})", o.expectations, errno_text(errno)));
    report.expectations_path = o.expectations;
    report.expectations_text = text.str();
    try {
      (void)parse_expectations(report.expectations_text);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("--expectations {}: {}", o.expectations, e.what()));
    }
  }
  report.fail_on_warn = o.fail_on_warn;
  report.profile = o.profile;
  report.files = o.files;
  report.html_path = o.html;
  if (o.price_per_gpu_hour && o.price_per_node_hour)
    throw UsageError("--price-per-gpu-hour: cannot be combined with --price-per-node-hour (give one of them)");
  for (const auto& [flag, price] : {std::pair{"--price-per-gpu-hour", o.price_per_gpu_hour},
                                    std::pair{"--price-per-node-hour", o.price_per_node_hour}}) {
    if (price && !(std::isfinite(*price) && *price >= 0))
      throw UsageError(fmt::format("{} {}: must be a finite price, 0 or above", flag, *price));
  }
  report.price_per_gpu_hour = o.price_per_gpu_hour;
  report.price_per_node_hour = o.price_per_node_hour;
  if (!(o.min_scaling_efficiency_pct > 0 && o.min_scaling_efficiency_pct <= 100))
    throw UsageError(fmt::format("--min-scaling-efficiency {}: must be a percentage above 0, at most 100",
                                 o.min_scaling_efficiency_pct));
  report.min_scaling_efficiency = o.min_scaling_efficiency_pct / 100.0;
  const bool code = o.currency.size() == 3 &&
                    std::all_of(o.currency.begin(), o.currency.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; });
  if (!o.currency.empty() && !code)
    throw UsageError(
        fmt::format("--currency {}: not an ISO 4217 code (three capital letters: USD, EUR, JPY)", o.currency));
  report.currency = o.currency;
  for (const std::string& e : report.expects) (void)parse_gate(e);
}

// `--profile smoke`: a short one-node suite for CI. Only the options the
// person did not give are set, so the profile can be narrowed further.
void apply_profile(const CLI::App& cmd, RawOptions& o) {
  if (o.profile.empty()) return;
  if (std::find(profiles.begin(), profiles.end(), o.profile) == profiles.end())
    throw UsageError(
        fmt::format("--profile: unknown profile '{}' (choose from {})", o.profile, fmt::join(profiles, ", ")));
  const auto unset = [&cmd](const char* flag) { return !given(cmd, flag); };
  if (unset("--sizes") && unset("--min-bytes") && unset("--max-bytes") && unset("--step-factor")) {
    o.min_bytes = "16";
    o.max_bytes = "16M";
    o.step_factor = 4;
  }
  if (unset("--ops")) o.ops = "allreduce,allgather,sendrecv";
  if (unset("--min-time-ms")) o.min_time_ms = 5;
  if (unset("--warmup")) o.warmup = 2;
  // The ladder and the pair matrix at 4 MiB, and the precision loop held
  // to 25 ms a point: the whole suite fits the budget on a small machine.
  if (unset("--pair-bytes")) o.pair_bytes = "4M";
  if (unset("--scale-bytes")) o.scale_bytes = "4M";
  if (unset("--max-time-ms")) o.max_time_ms = 25;
  if (unset("--budget")) o.budget = "60s";
  if (unset("--on-finding")) o.on_finding = "halve";
  o.check_votes.clear();
}

void apply_scale_options(const RawOptions& o, ScaleConfig& scale) {
  if (!o.scale_ops.empty()) scale.ops = parse_list<Op>("--scale-ops", o.scale_ops, parse_op, all_ops(), "op");
  if (!o.scale_bytes.empty()) {
    scale.bytes = size_value("--scale-bytes", o.scale_bytes);
    require_whole_elements("--scale-bytes", scale.bytes, {DType::float32});
  }
  if (!o.mem_cap.empty()) scale.mem_cap = size_value("--mem-cap", o.mem_cap);
  if (scale.mem_cap < 16) throw UsageError(fmt::format("--mem-cap {}: too small for any buffer", o.mem_cap));
  scale.sweep = o.scale_sweep;
  if (!std::isfinite(o.nic_gbit) || o.nic_gbit < 0)
    throw UsageError(fmt::format("--nic-gbit-per-node {}: must be above 0", o.nic_gbit));
  if (o.nic_gbit > 0) scale.nic_gbit_per_node = o.nic_gbit;
  if (!o.grad_bytes.empty() && o.params > 0)
    throw UsageError("--grad-bytes: cannot be combined with --params (give one of them)");
  if (!o.grad_bytes.empty()) scale.grad_bytes = size_value("--grad-bytes", o.grad_bytes);
  if (!std::isfinite(o.params) || o.params < 0) throw UsageError(fmt::format("--params {}: must be above 0", o.params));
  scale.grad_dtype = parse_list<DType>("--grad-dtype", o.grad_dtype, parse_dtype, all_dtypes(), "dtype").front();
  if (o.params > 0) {
    if (o.params < 1 || std::floor(o.params) != o.params)
      throw UsageError(fmt::format("--params {}: must be a whole number of parameters, 1 or more", o.params));
    if (o.params * static_cast<double>(element_size(scale.grad_dtype)) > static_cast<double>(max_message_bytes))
      throw UsageError(fmt::format("--params {}: the gradients would be above the largest message size, {}", o.params,
                                   format_size(max_message_bytes)));
    scale.grad_bytes = static_cast<std::size_t>(o.params) * element_size(scale.grad_dtype);
  }
  if (scale.grad_bytes > 0 && !(o.compute_ms > 0))
    throw UsageError("--compute-ms: the training projection needs the compute time per step (above 0)");
  if (!std::isfinite(o.compute_ms) || o.compute_ms < 0)
    throw UsageError(fmt::format("--compute-ms {}: must be above 0", o.compute_ms));
  if (!(o.overlap >= 0 && o.overlap <= 1))
    throw UsageError(fmt::format("--overlap {}: must be between 0 and 1", o.overlap));
  scale.compute_ms = o.compute_ms;
  scale.overlap = o.overlap;
  scale.sharded = o.sharded;
}

// --tp / --pp: what can be checked before the layout is known (the layout
// checks are the engine's, check_model_parallel_layout).
void apply_model_parallel_options(const CLI::App& cmd, const RawOptions& o, Command command, RunConfig& c) {
  ModelParallelConfig& m = c.model;
  constexpr int most = 1 << 20;
  for (const auto& [flag, value] : {std::pair{"--tp", o.tp}, std::pair{"--pp", o.pp}})
    if (value < 1 || value > most) throw UsageError(fmt::format("{} {}: must be between 1 and {}", flag, value, most));
  m.tp = o.tp;
  m.pp = o.pp;
  if (!m.enabled()) {
    for (const char* flag : {"--hidden", "--seq", "--micro-batch", "--micro-batches", "--layers", "--act-dtype"})
      if (given(cmd, flag)) throw UsageError(fmt::format("{}: used only with --tp or --pp above 1", flag));
    return;
  }
  if (command == Command::scale && m.pp > 1)
    throw UsageError(
        fmt::format("--pp {}: the pipeline projection uses the node-pair matrix, which only `run` measures", m.pp));
  for (const auto& [flag, value] : {std::pair{"--hidden", o.hidden}, std::pair{"--seq", o.seq}}) {
    if (!given(cmd, flag))
      throw UsageError(fmt::format("{}: the model-parallel projection needs it (a whole number above 0)", flag));
    if (value < 1) throw UsageError(fmt::format("{} {}: must be a whole number above 0", flag, value));
  }
  if (o.micro_batch < 1) throw UsageError(fmt::format("--micro-batch {}: must be 1 or above", o.micro_batch));
  if (o.micro_batches < 1) throw UsageError(fmt::format("--micro-batches {}: must be 1 or above", o.micro_batches));
  if (!given(cmd, "--layers")) throw UsageError("--layers: the model-parallel projection needs the layer count");
  if (o.layers < 1) throw UsageError(fmt::format("--layers {}: must be 1 or above", o.layers));
  if (o.layers % m.pp != 0)
    throw UsageError(
        fmt::format("--layers {}: must be a multiple of --pp {} (whole layers on every stage)", o.layers, m.pp));
  m.hidden = static_cast<std::size_t>(o.hidden);
  m.seq = static_cast<std::size_t>(o.seq);
  m.micro_batch = static_cast<std::size_t>(o.micro_batch);
  m.micro_batches = o.micro_batches;
  m.layers = o.layers;
  m.dtype = parse_list<DType>("--act-dtype", o.act_dtype, parse_dtype, all_dtypes(), "dtype").front();
  if (!activation_bytes(m))
    throw UsageError(
        fmt::format("--hidden {} x --seq {} x --micro-batch {}: the activation is above the largest "
                    "message size, {}",
                    o.hidden, o.seq, o.micro_batch, format_size(max_message_bytes)));
  if (!(c.scale.compute_ms > 0))
    throw UsageError("--compute-ms: the model-parallel projection needs the compute time per step (above 0)");
}

// "4:4,8:8": server sizes in GPUs and their prices per hour.
std::vector<ServerPrice> parse_server_prices(const std::string& text) {
  std::vector<ServerPrice> prices;
  for (const std::string& item : split_list(text)) {
    const auto colon = item.find(':');
    const std::string gpus = item.substr(0, colon);
    const std::string price = colon == std::string::npos ? std::string() : item.substr(colon + 1);
    const bool digits = !gpus.empty() && gpus.find_first_not_of("0123456789") == std::string::npos && gpus.size() < 7;
    if (colon == std::string::npos || !digits || std::stoi(gpus) < 1)
      throw UsageError(
          fmt::format("--price {}: '{}' is not GPUS:PRICE (GPUs a whole number, 1 or more; e.g. 8:8)", text, item));
    double value = 0;
    std::size_t used = 0;
    try {
      value = std::stod(price, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (price.empty() || used != price.size() || !std::isfinite(value) || value < 0)
      throw UsageError(fmt::format("--price {}: '{}' is not a price (a finite number, 0 or above)", text, price));
    const int n = std::stoi(gpus);
    if (std::any_of(prices.begin(), prices.end(), [n](const ServerPrice& p) { return p.gpus == n; }))
      throw UsageError(fmt::format("--price {}: {} GPUs priced twice", text, n));
    prices.push_back({n, value});
  }
  if (prices.empty()) throw UsageError(fmt::format("--price {}: no server size given (e.g. 4:4,8:8)", text));
  std::sort(prices.begin(), prices.end(), [](const ServerPrice& a, const ServerPrice& b) { return a.gpus < b.gpus; });
  return prices;
}

void apply_gpu_ladder_options(const RawOptions& o, ScaleConfig& scale) {
  scale.gpu_ladder = !o.no_gpu_ladder;
  if (!o.steps.empty()) {
    const bool digits = o.steps.find_first_not_of("0123456789") == std::string::npos && o.steps.size() < 16;
    if (!digits || std::stoll(o.steps) < 1)
      throw UsageError(fmt::format("--steps {}: must be a whole number of steps, 1 or more", o.steps));
    scale.steps = std::stoll(o.steps);
  }
  if (!o.server_prices.empty()) scale.server_prices = parse_server_prices(o.server_prices);
  for (const auto& [flag, used] :
       {std::pair{"--steps", !o.steps.empty()}, std::pair{"--price", !o.server_prices.empty()}}) {
    if (!used) continue;
    if (o.no_gpu_ladder) throw UsageError(fmt::format("{}: prices the GPU ladder, which --no-gpu-ladder skips", flag));
    if (scale.grad_bytes == 0)
      throw UsageError(
          fmt::format("{}: the job needs the training projection (--grad-bytes or --params, and --compute-ms)", flag));
  }
  if (!scale.server_prices.empty() && !scale.steps)
    throw UsageError("--price: the cost per job needs the job length (--steps N)");
}

void apply_pair_options(const RawOptions& o, PairConfig& pairs) {
  if (!o.pair_bytes.empty()) pairs.bytes = size_value("--pair-bytes", o.pair_bytes);
  if (!o.pair_small_bytes.empty()) pairs.small_bytes = size_value("--pair-small-bytes", o.pair_small_bytes);
  require_whole_elements("--pair-bytes", pairs.bytes, {DType::float32});
  require_whole_elements("--pair-small-bytes", pairs.small_bytes, {DType::float32});
  if (o.pairs == "all") {
    pairs.sample = 0;
  } else if (o.pairs.rfind("sample:", 0) == 0) {
    const std::string k = o.pairs.substr(7);
    const bool digits = !k.empty() && k.find_first_not_of("0123456789") == std::string::npos && k.size() < 9;
    if (!digits || std::stoi(k) < 1)
      throw UsageError(fmt::format("--pairs {}: K in sample:K must be a whole number of rounds, 1 or more", o.pairs));
    pairs.sample = std::stoi(k);
  } else {
    throw UsageError(fmt::format("--pairs: unknown choice '{}' (all, or sample:K)", o.pairs));
  }
  if (!(o.outlier_mads > 0) || !std::isfinite(o.outlier_mads))
    throw UsageError(fmt::format("--outlier-mads {}: must be above 0", o.outlier_mads));
  if (!(o.outlier_drop > 0 && o.outlier_drop < 1))
    throw UsageError(fmt::format("--outlier-drop {}: must be between 0 and 1", o.outlier_drop));
  if (o.pair_full_limit < 2)
    throw UsageError(fmt::format("--pair-full-limit {}: must be 2 or above", o.pair_full_limit));
  if (o.pair_peers < 1) throw UsageError(fmt::format("--pair-peers {}: must be 1 or above", o.pair_peers));
  if (o.pair_seed == 0) throw UsageError("--pair-seed 0: must be above 0 (0 would keep the node order)");
  pairs.full_limit = o.pair_full_limit;
  pairs.peers = o.pair_peers;
  pairs.seed = o.pair_seed;
  pairs.outlier_mads = o.outlier_mads;
  pairs.outlier_drop = o.outlier_drop;
}

void apply_placement_options(const RawOptions& o, PlacementConfig& p) {
  if (!(o.island_ratio > 1) || !std::isfinite(o.island_ratio))
    throw UsageError(fmt::format("--island-ratio {}: must be a finite number above 1", o.island_ratio));
  if (o.bisection_halvings < 0 || o.bisection_halvings > 1000)
    throw UsageError(fmt::format("--bisection-halvings {}: must be from 0 to 1000", o.bisection_halvings));
  if (!(o.oversubscription_limit >= 1) || !std::isfinite(o.oversubscription_limit))
    throw UsageError(
        fmt::format("--oversubscription-limit {}: must be a finite number, 1 or above", o.oversubscription_limit));
  p.island_ratio = o.island_ratio;
  p.bisection_halvings = o.bisection_halvings;
  p.bisection_seed = o.bisection_seed;
  p.oversubscription_limit = o.oversubscription_limit;
}

void apply_storage_options(const RawOptions& o, StorageConfig& s) {
  s.path = o.storage_path;
  if (s.path.empty()) {
    for (const auto& [flag, given_here] :
         {std::pair{"--file-bytes", !o.file_bytes.empty()}, std::pair{"--storage-per-node", o.storage_per_node},
          std::pair{"--storage-buffered", o.storage_buffered}})
      if (given_here) throw UsageError(fmt::format("{}: needs --storage-path DIR", flag));
  }
  if (!o.file_bytes.empty()) {
    s.file_bytes = size_value("--file-bytes", o.file_bytes);
  }
  s.per_node = o.storage_per_node;
  s.buffered = o.storage_buffered;
}

// p2p: the matrix, or with --sweep the OSU tests between two ranks; each
// refuses the other's options.
void apply_p2p_options(const CLI::App& cmd, const RawOptions& o, RunConfig& c) {
  P2PSweepConfig& s = c.p2p_sweep;
  s.enabled = o.p2p_sweep;
  const std::vector<const char*> sweep_only{"--min-bytes", "--max-bytes", "--step-factor", "--sizes",
                                            "--ranks",     "--nodes",     "--tests",       "--window"};
  const std::vector<const char*> matrix_only{"--pair-bytes",         "--pair-small-bytes", "--pairs",
                                             "--outlier-mads",       "--outlier-drop",     "--island-ratio",
                                             "--bisection-halvings", "--bisection-seed",   "--oversubscription-limit"};
  for (const char* flag : s.enabled ? matrix_only : sweep_only) {
    if (!given(cmd, flag)) continue;
    if (s.enabled) throw UsageError(fmt::format("{}: p2p --sweep does not use it (the pair matrix does)", flag));
    throw UsageError(fmt::format("{}: p2p uses it only with --sweep", flag));
  }
  if (!s.enabled) return;
  c.sizes = parse_sizes(o, s.size_range, {DType::uint8});
  if (!o.p2p_ranks.empty() && !o.p2p_nodes.empty())
    throw UsageError("--ranks: cannot be combined with --nodes (give one of them)");
  if (!o.p2p_ranks.empty()) s.ranks = parse_pair("--ranks", o.p2p_ranks, "rank");
  if (!o.p2p_nodes.empty()) s.nodes = parse_pair("--nodes", o.p2p_nodes, "node");
  if (!o.p2p_tests.empty())
    s.tests = parse_list<P2PTest>("--tests", o.p2p_tests, parse_p2p_test, all_p2p_tests(), "test");
  if (o.window < 1) throw UsageError(fmt::format("--window {}: must be 1 or above", o.window));
  // Each message in flight is a request (MPI) or an op in one group (NCCL),
  // allocated up front; osu_bw's window is 64.
  constexpr int deepest_window = 4096;
  if (o.window > deepest_window)
    throw UsageError(fmt::format("--window {}: must be at most {} messages in flight", o.window, deepest_window));
  s.window = o.window;
}

bool check_from(const RawOptions& o) {
  if (o.check_votes.empty()) return defaults().check;
  for (const auto& [flag, value] : o.check_votes) {
    if (value != o.check_votes.front().second)
      throw UsageError(
          fmt::format("{}: cannot be combined with {} (give one of them)", o.check_votes.front().first, flag));
  }
  return o.check_votes.front().second;
}

// NCCL_TESTS_MIN_BW, in GB/s as nccl-tests reads it; unset or empty: none.
std::optional<double> min_bw_from_environment() {
  const char* text = std::getenv("NCCL_TESTS_MIN_BW");
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(value) || value < 0)
    throw UsageError(fmt::format("NCCL_TESTS_MIN_BW={}: must be a number of GB/s, 0 or above", text));
  return value;
}

RunConfig to_config(const CLI::App& cmd, const RawOptions& o, Command command) {
  RunConfig c;
  c.command = command;
  c.transport = parse_choice_flag<TransportChoice>("--transport", o.transport, "transport");

  if (!o.ops.empty()) c.ops = parse_list<Op>("--ops", o.ops, parse_op, all_ops(), "op");
  if (!o.dtypes.empty()) c.dtypes = parse_list<DType>("--dtype", o.dtypes, parse_dtype, all_dtypes(), "dtype");
  if (!o.redops.empty()) c.redops = parse_list<RedOp>("--redop", o.redops, parse_redop, all_redops(), "redop");
  if (command == Command::run || command == Command::sweep) c.sizes = parse_sizes(o, c.size_range, c.dtypes);

  if (o.root < 0) throw UsageError(fmt::format("--root {}: must be 0 or above", o.root));
  c.root = o.root;
  if (o.warmup < 0) throw UsageError(fmt::format("--warmup {}: must be 0 or above", o.warmup));
  if (given(cmd, "--iters") && o.iters < 1) throw UsageError(fmt::format("--iters {}: must be 1 or above", o.iters));
  if (!(o.min_time_ms > 0.0) || !std::isfinite(o.min_time_ms))
    throw UsageError(fmt::format("--min-time-ms {}: must be a finite number above 0", o.min_time_ms));
  if (o.min_iters < 1) throw UsageError(fmt::format("--min-iters {}: must be 1 or above", o.min_iters));
  if (o.max_iters < o.min_iters)
    throw UsageError(fmt::format("--max-iters {} is below --min-iters {}", o.max_iters, o.min_iters));
  // A batch keeps one stamp per iteration: a million is 8 MB, and a million
  // 1-µs iterations already take a second per batch.
  constexpr int most_iterations = 1'000'000;
  for (const auto& [flag, count] : {std::pair{"--warmup", o.warmup}, std::pair{"--iters", o.iters},
                                    std::pair{"--min-iters", o.min_iters}, std::pair{"--max-iters", o.max_iters}})
    if (count > most_iterations)
      throw UsageError(fmt::format("{} {}: must be at most {} iterations", flag, count, most_iterations));
  c.iterations = {o.warmup, o.iters, o.min_time_ms, o.min_iters, o.max_iters};
  if (!(o.precision_pct >= 0.0) || o.precision_pct >= 100.0)
    throw UsageError(fmt::format("--precision {}: must be a percentage from 0 (off) to below 100", o.precision_pct));
  if (!(o.max_time_ms > 0.0) || !std::isfinite(o.max_time_ms))
    throw UsageError(fmt::format("--max-time-ms {}: must be above 0", o.max_time_ms));
  c.iterations.precision = o.precision_pct / 100.0;
  c.iterations.max_time_ms = o.max_time_ms;
  if (!o.budget.empty() && o.budget != "none") {
    c.budget_s = parse_duration_s(o.budget);
    if (!c.budget_s)
      throw UsageError(fmt::format(
          "--budget: '{}' is not a duration above 0 (seconds, or with s, m or h: 90s, 5m) or none", o.budget));
  }
  c.health = !o.no_health;
  c.on_finding = parse_choice_flag<OnFinding>("--on-finding", o.on_finding);
  if (c.on_finding == OnFinding::halve && !c.budget_s)
    throw UsageError("--on-finding halve: only with --budget (it halves what the budget has left)");
  c.check = check_from(o);
  if (o.check_all && !c.check)
    throw UsageError("--check-all: cannot be combined with --no-check or -c 0 (give one of them)");
  c.check_all = o.check_all;
  c.rank_time = parse_choice_flag<RankTime>("-a/--rank-time", o.rank_time);
  c.inplace = parse_choice_flag<InPlaceChoice>("--inplace", o.inplace);

  c.json_path = o.json;
  c.csv_path = o.csv;
  for (const char ch : o.label)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      throw UsageError("--label: must not hold control characters");
  c.label = o.label;
  c.quiet = o.quiet;
  c.progress = parse_choice_flag<ProgressChoice>("--progress", o.progress);
  c.format = parse_choice_flag<OutputFormat>("--format", o.format);
  c.min_bw_gbs = min_bw_from_environment();
  if (o.gpus < 0 || (given(cmd, "--gpus") && o.gpus < 1))
    throw UsageError(fmt::format("--gpus {}: must be 1 or above", o.gpus));
  if (o.graph_launches < 0) throw UsageError(fmt::format("-G {}: must be 0 or above", o.graph_launches));
  // A week: long enough for any step, short enough that milliseconds fit.
  constexpr double longest_timeout_s = 7 * 24 * 3600;
  if (!(o.timeout_s > 0.0)) throw UsageError(fmt::format("--timeout {}: must be above 0 seconds", o.timeout_s));
  // The deadline covers start-up too (MPI's first agreement, NCCL's
  // communicator), which alone can take a second; below a millisecond it
  // once rounded to no time at all and failed every run at once.
  if (o.timeout_s < 1.0)
    throw UsageError(
        fmt::format("--timeout {}: must be at least 1 second (the deadline covers start-up too)", o.timeout_s));
  if (!(o.timeout_s <= longest_timeout_s))
    throw UsageError(fmt::format("--timeout {}: must be at most {} seconds", o.timeout_s, longest_timeout_s));
  c.gpu = {o.gpus, o.allow_shared_gpu, o.graph || o.graph_launches > 0, o.timeout_s, o.nccl_diagnostics};
  c.sysfs_root = o.sysfs_root;
  c.procfs_root = o.procfs_root;
  c.measure_topology = !o.no_measure;
  apply_scale_options(o, c.scale);
  apply_model_parallel_options(cmd, o, command, c);
  apply_gpu_ladder_options(o, c.scale);
  apply_pair_options(o, c.pairs);
  apply_placement_options(o, c.placement);
  apply_storage_options(o, c.storage);
  if (command == Command::p2p) apply_p2p_options(cmd, o, c);
  apply_decision_options(o, c.report);
  return c;
}

// --- Mistakes: options of another subcommand, typos, nccl-tests habits. ---

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The closest of `candidates` to `typed`, when close enough to be a typo.
std::optional<std::string> closest(std::string_view typed, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = std::max<std::size_t>(2, typed.size() / 4) + 1;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(typed, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::vector<std::string> option_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->get_group().empty()) continue;
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// One line for an argument the subcommand does not take.
[[noreturn]] void refuse_extra(const std::string& token, const CLI::App& cmd, const std::vector<CLI::App*>& all) {
  if (token.size() < 2 || token[0] != '-')
    throw UsageError(fmt::format("'{}': {} takes no such argument", token, cmd.get_name()));
  const std::string flag = token.substr(0, token.find('='));
  std::vector<std::string> owners;
  for (const CLI::App* other : all) {
    const CLI::Option* opt = other->get_option_no_throw(flag);
    if (other != &cmd && opt != nullptr && !opt->get_group().empty()) owners.push_back(other->get_name());
  }
  if (!owners.empty())
    throw UsageError(
        fmt::format("{}: {} does not use it (an option of {})", flag, cmd.get_name(), fmt::join(owners, ", ")));
  if (const auto guess = closest(flag, option_names(cmd)))
    throw UsageError(fmt::format("{}: unknown option of {}; did you mean {}?", flag, cmd.get_name(), *guess));
  throw UsageError(
      fmt::format("{}: unknown option of {} (fabricbench {} --help lists them)", flag, cmd.get_name(), cmd.get_name()));
}

// Whole numbers are decimal: the parser underneath reads "010" as octal 8
// and "0x10" as 16, which nobody typing --iters means. Leading zeros are
// dropped ("010" is 10); any other form is refused with the value.
void decimal_integers_only(CLI::App& cmd) {
  const CLI::Validator decimal(
      [](std::string& value) -> std::string {
        const std::size_t sign = !value.empty() && (value[0] == '+' || value[0] == '-') ? 1 : 0;
        const bool digits =
            value.size() > sign && std::all_of(value.begin() + static_cast<std::ptrdiff_t>(sign), value.end(),
                                               [](char c) { return c >= '0' && c <= '9'; });
        if (!digits) return fmt::format("'{}' is not a whole decimal number", value);
        const std::size_t first = std::min(value.find_first_not_of('0', sign), value.size() - 1);
        value.erase(sign, first - sign);
        return "";
      },
      "", "decimal");
  for (CLI::Option* opt : cmd.get_options()) {
    const std::string type = opt->get_type_name();
    const std::string base = type.substr(0, type.find(':'));
    if (base == "INT" || base == "UINT") opt->transform(decimal);
  }
}

void refuse_no_equivalents(const CLI::App& cmd) {
  for (const NoEquivalent& n : no_equivalents) {
    const std::string names = n.names;
    const std::string first = names.substr(0, names.find(','));
    if (given(cmd, first.c_str())) throw UsageError(fmt::format("fabricbench has no {}: {}", first, n.why));
  }
}

// `fabricbench help`: the topics, one line each; `help TOPIC`: that guide.
std::string help_text(const std::string& topic) {
  std::vector<std::string> topics;
  std::size_t width = 0;
  for (const Guide& g : guides()) {
    if (g.topic == topic) return std::string(g.text);
    topics.emplace_back(g.topic);
    width = std::max(width, g.topic.size());
  }
  if (!topic.empty()) {
    if (const auto guess = closest(topic, topics))
      throw UsageError(
          fmt::format("help: no topic '{}'; did you mean {}? (topics: {})", topic, *guess, fmt::join(topics, ", ")));
    throw UsageError(fmt::format("help: no topic '{}' (topics: {})", topic, fmt::join(topics, ", ")));
  }
  std::string text = "Guides built into fabricbench; fabricbench help TOPIC prints one:\n\n";
  for (const Guide& g : guides()) text += fmt::format("  {:<{}}  {}\n", g.topic, width, guide_title(g));
  text += "\nOptions and their defaults: fabricbench SUBCOMMAND --help, and man fabricbench.\n";
  return text;
}

}  // namespace

std::vector<std::string> arguments_for_program(const std::string& program, std::vector<std::string> args) {
  const std::string base = program.substr(program.find_last_of('/') + 1);
  const std::optional<Op> op = op_of_nccl_tests_binary(base);
  if (!op) return args;
  for (const std::string& a : args) {
    if (a == "--ops" || a.rfind("--ops=", 0) == 0)
      throw UsageError(fmt::format("--ops: as {} fabricbench runs {} alone; for other ops run fabricbench sweep --ops",
                                   base, name(*op)));
  }
  std::vector<std::string> full{"sweep", "--ops", std::string(name(*op)), "--format", "nccl-tests"};
  full.insert(full.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
  return full;
}

ParseOutcome parse_command_line(const std::vector<std::string>& args) {
  CLI::App app{"fabricbench: GPU cluster interconnect benchmark (NCCL and MPI collectives, bus bandwidth)",
               "fabricbench"};
  app.require_subcommand(0, 1);
  RawOptions options;
  std::vector<CLI::App*> commands;
  for (const Subcommand& s : subcommands) {
    CLI::App* cmd = app.add_subcommand(s.name, s.description);
    cmd->allow_extras();
    for (const OptionGroup& g : option_groups) {
      if ((g.uses & s.bit) == 0) continue;
      const std::size_t before = cmd->get_options().size();
      g.add(*cmd, options, s.command);
      const std::vector<CLI::Option*> all = cmd->get_options();
      if (*g.heading != '\0')
        for (std::size_t i = before; i < all.size(); ++i)
          if (all[i]->nonpositional() && !all[i]->get_group().empty()) all[i]->group(g.heading);
    }
    cmd->footer(fmt::format("\nExamples:\n{}\n\nThe guides say the rest: fabricbench help (topics), man fabricbench",
                            s.examples));
    if ((no_equivalent_group.uses & s.bit) != 0) no_equivalent_group.add(*cmd, options, s.command);
    decimal_integers_only(*cmd);
    commands.push_back(cmd);
  }

  ParseOutcome outcome;
  outcome.config.command_line = args;
  if (!args.empty() && args[0] == "--version") {
    outcome.config.command = Command::version;
    return outcome;
  }
  // No subcommand means `run`: options given without one belong to it.
  std::vector<std::string> argv = args;
  const auto is_subcommand = [](const std::string& word) {
    return std::any_of(subcommands.begin(), subcommands.end(), [&](const Subcommand& s) { return word == s.name; });
  };
  if (!argv.empty() && !argv[0].empty() && argv[0][0] != '-' && !is_subcommand(argv[0])) {
    std::vector<std::string> names;
    for (const Subcommand& s : subcommands) names.emplace_back(s.name);
    if (const auto guess = closest(argv[0], names))
      throw UsageError(fmt::format("'{}' is not a subcommand; did you mean {}?", argv[0], *guess));
    throw UsageError(fmt::format("'{}' is not a subcommand (choose from {})", argv[0], fmt::join(names, ", ")));
  }
  const bool names_subcommand = !argv.empty() && (is_subcommand(argv[0]) || argv[0] == "-h" || argv[0] == "--help");
  if (!names_subcommand) argv.insert(argv.begin(), "run");

  try {
    std::vector<std::string> reversed(argv.rbegin(), argv.rend());
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    outcome.exit_now = true;
    outcome.text = app.help();
    for (const CLI::App* sub : commands) {
      if (sub->parsed()) outcome.text = sub->help();
    }
    return outcome;
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    if (const auto nl = message.find('\n'); nl != std::string::npos) message.resize(nl);
    throw UsageError(message);
  }

  const CLI::App* chosen = nullptr;
  Command command = Command::run;
  for (std::size_t i = 0; i < subcommands.size(); ++i) {
    if (commands[i]->parsed()) {
      chosen = commands[i];
      command = subcommands[i].command;
    }
  }
  if (chosen == nullptr) throw UsageError("no subcommand");
  refuse_no_equivalents(*chosen);
  refuse_empty_values(*chosen);
  if (const std::vector<std::string> extra = chosen->remaining(); !extra.empty())
    refuse_extra(extra.front(), *chosen, commands);

  if (command == Command::version) {
    outcome.config.command = Command::version;
    return outcome;
  }
  if (command == Command::help) {
    outcome.config.command = Command::help;
    outcome.exit_now = true;
    outcome.text = help_text(options.help_topic);
    return outcome;
  }
  if (command == Command::report) {
    RunConfig c;
    c.command = Command::report;
    c.csv_path = options.csv;
    c.quiet = options.quiet;
    apply_decision_options(options, c.report);
    c.command_line = args;
    outcome.config = std::move(c);
    return outcome;
  }
  if (command == Command::run) {
    apply_profile(*chosen, options);
    // A run that ends: the whole suite within the default budget unless
    // --budget says otherwise (none: as long as it takes).
    if (options.budget.empty()) options.budget = std::string(default_run_budget);
  }
  outcome.config = to_config(*chosen, options, command);
  // The probe moves no collective data; the host transport only fills the record.
  if (command == Command::topo || command == Command::storage) outcome.config.transport = TransportChoice::mpi;
  outcome.config.command_line = args;
  return outcome;
}

void validate_for_world(const RunConfig& config, int nranks) {
  const bool rooted = std::any_of(config.ops.begin(), config.ops.end(), has_root);
  if (rooted && config.root >= nranks)
    throw UsageError(fmt::format("--root {}: there are only {} ranks (0 to {})", config.root, nranks, nranks - 1));
}

}  // namespace fabricbench
