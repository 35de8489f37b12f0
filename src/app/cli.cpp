#include "fabricbench/app/cli.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "fabricbench/analysis/verdict.hpp"
#include "fabricbench/core/budget.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/core/sizes.hpp"

namespace fabricbench {
namespace {

// Flags as typed, validated after CLI11 has split them so that every error is
// one line naming the flag and the value.
struct RawOptions {
  std::string transport = "auto";
  std::string min_bytes;
  std::string max_bytes;
  double step_factor = 2.0;
  bool step_given = false;
  std::string sizes;
  std::string ops;
  std::string dtypes;
  std::string redops;
  int root = 0;
  int warmup = 5;
  int iters = 0;
  bool iters_given = false;
  double min_time_ms = 20.0;
  int min_iters = 5;
  int max_iters = 10000;
  double precision_pct = 1.0;
  double max_time_ms = 100.0;
  std::string budget;
  bool no_health = false;
  bool no_check = false;
  bool check_given = false;  // --check and --no-check both given: which one was meant?
  std::string inplace = "both";
  std::string json;
  std::string csv;
  std::string label;
  bool quiet = false;
  std::string progress = "auto";
  // NCCL transport.
  int gpus = 0;
  bool allow_shared_gpu = false;
  bool graph = false;
  double timeout_s = 300;
  // Scaling ladder.
  std::string scale_ops;
  std::string scale_bytes;
  std::string mem_cap;
  bool scale_sweep = false;
  double nic_gbit = 0;
  std::string grad_bytes;
  double params = 0;
  std::string grad_dtype = "bfloat16";
  double compute_ms = 0;
  double overlap = 0;
  bool sharded = false;
  // Pair matrix.
  std::string pair_bytes;
  std::string pair_small_bytes;
  std::string pairs = "all";
  int pair_full_limit = 64;
  int pair_peers = 4;
  unsigned pair_seed = 1;
  double outlier_mads = 4.0;
  double outlier_drop = 0.5;
  // Topology probe.
  std::string sysfs_root;
  std::string procfs_root;
  bool no_measure = false;
  // Decisions: gates, references, prices (run and report), report outputs.
  std::vector<std::string> expects;
  bool expect_reference = false;
  bool fail_on_warn = false;
  // NaN, infinities and negative values would reach the result file, which
  // `report` then rejects: given prices are checked, not taken as "not given".
  std::optional<double> price_per_gpu_hour;
  std::optional<double> price_per_node_hour;
  std::string profile;
  std::vector<std::string> files;
  std::string html;
};

constexpr const char* default_min_bytes = "8";
constexpr const char* default_max_bytes = "64M";

void add_sweep_options(CLI::App& cmd, RawOptions& o) {
  cmd.add_option("--transport", o.transport, "auto | nccl | mpi (auto: nccl when built with it and a GPU is visible)");
  cmd.add_option("-b,--min-bytes", o.min_bytes, "Smallest message size (bytes, or K/M/G binary suffix)  [8]");
  cmd.add_option("-e,--max-bytes", o.max_bytes, "Largest message size  [64M]");
  cmd.add_option("-f,--step-factor", o.step_factor, "Multiply the size by this between steps (> 1)  [2]")
      ->each([&o](const std::string&) { o.step_given = true; });
  cmd.add_option("--sizes", o.sizes, "Explicit sizes, comma separated, e.g. 8,1K,64M (instead of -b/-e/-f)");
  cmd.add_option("--ops", o.ops,
                 "Operations, comma separated: allreduce, allgather, reducescatter, broadcast, reduce, alltoall, "
                 "sendrecv, or all  [allreduce,allgather,sendrecv]");
  cmd.add_option("--dtype", o.dtypes,
                 "Element types, comma separated: float, double, int32, int64, int8, uint8, half, bfloat16, fp8e4m3, "
                 "fp8e5m2  [float]");
  cmd.add_option("--redop", o.redops, "Reductions, comma separated: sum, prod, min, max, avg (nccl only)  [sum]");
  cmd.add_option("--root", o.root, "Root rank of broadcast and reduce  [0]");
  cmd.add_option("--warmup", o.warmup, "Warm-up iterations before each measurement  [5]");
  cmd.add_option("--iters", o.iters, "Fixed number of timed iterations (default: adaptive)")
      ->each([&o](const std::string&) { o.iters_given = true; });
  cmd.add_option("--min-time-ms", o.min_time_ms, "Adaptive iterations: time to fill per size and placement  [20]");
  cmd.add_option("--min-iters", o.min_iters, "Adaptive iterations: lower bound  [5]");
  cmd.add_option("--max-iters", o.max_iters, "Adaptive iterations: upper bound  [10000]");
  cmd.add_option("--precision", o.precision_pct,
                 "Adaptive iterations: add iterations until the mean's 95% confidence half-width is within this "
                 "percentage (0: off)  [1]");
  cmd.add_option("--max-time-ms", o.max_time_ms,
                 "Adaptive iterations: time one size and placement may take to reach --precision  [100]");
  cmd.add_option("--budget", o.budget,
                 "End the whole run within DURATION (e.g. 90s, 5m): phases get shares; what does not fit is cut "
                 "and listed  [none; 60s with --profile smoke]");
  cmd.add_flag("--check", o.check_given, "Verify every result element (on by default)");
  cmd.add_flag("--no-check", o.no_check, "Skip the data check (the result's data_ok is then null)");
  cmd.add_option("--inplace", o.inplace, "Placements to measure: both | only | no  [both]");
  cmd.add_option("--json", o.json, "Write the results as JSON to FILE (rewritten after each op)");
  cmd.add_option("--csv", o.csv, "Write the results as CSV to FILE");
  cmd.add_option("--label", o.label,
                 "Name this run (e.g. the provider): saved in the JSON, on every CSV row and in comparisons");
  cmd.add_flag("-q,--quiet", o.quiet, "Print no table, only the summary and errors");
  cmd.add_option("--progress", o.progress,
                 "Progress line on stderr: auto (when stderr is a terminal), on, off  [auto]; under mpirun the "
                 "ranks' stderr is a pipe, so pass on to see it");
  cmd.add_option("--gpus", o.gpus, "nccl without a launcher: drive this many local GPUs, one thread each");
  cmd.add_flag("--allow-shared-gpu", o.allow_shared_gpu,
               "nccl: allow several ranks on one GPU (a functional check only: they measure each other)");
  cmd.add_flag("--graph", o.graph, "nccl: capture each timed batch in a CUDA graph");
  cmd.add_option("--timeout", o.timeout_s,
                 "Seconds any wait on the GPU or a peer may take before the run aborts  [300]");
}

void add_topology_options(CLI::App& cmd, RawOptions& o) {
  cmd.add_option("--sysfs-root", o.sysfs_root, "Read sysfs from DIR instead of /sys (fixtures, containers)")
      ->envname("FABRICBENCH_SYSFS_ROOT");
  cmd.add_option("--procfs-root", o.procfs_root,
                 "Read procfs from DIR instead of /proc; os-release then comes from DIR/../etc")
      ->envname("FABRICBENCH_PROCFS_ROOT");
  cmd.add_flag("--no-measure", o.no_measure, "Topology: skip the host<->device and device<->device copy bandwidths");
}

void add_scale_options(CLI::App& cmd, RawOptions& o) {
  cmd.add_option("--scale-ops", o.scale_ops, "Ladder operations, comma separated  [allreduce,allgather]");
  cmd.add_option("--scale-bytes", o.scale_bytes, "Ladder message size, capped by --mem-cap  [256M]");
  cmd.add_option("--mem-cap", o.mem_cap, "Buffer memory per rank the ladder may use  [2G]");
  cmd.add_flag("--scale-sweep", o.scale_sweep, "Also run a short size sweep at every ladder level");
  cmd.add_option("--nic-gbit-per-node", o.nic_gbit, "NIC line rate per node in Gb/s, for the NIC-bound ceiling");
  cmd.add_option("--grad-bytes", o.grad_bytes, "Projection: gradient bytes all-reduced per training step");
  cmd.add_option("--params", o.params, "Projection: parameter count (with --grad-dtype) instead of --grad-bytes");
  cmd.add_option("--grad-dtype", o.grad_dtype, "Projection: gradient element type  [bfloat16]");
  cmd.add_option("--compute-ms", o.compute_ms, "Projection: compute time per step on one GPU, in ms");
  cmd.add_option("--overlap", o.overlap, "Projection: fraction of compute that hides communication, 0..1  [0]");
  cmd.add_flag("--sharded", o.sharded, "Projection: sharded data parallel (reduce-scatter + all-gather)");
}

void add_pair_options(CLI::App& cmd, RawOptions& o) {
  cmd.add_option("--pair-bytes", o.pair_bytes, "Pair matrix: message size for bandwidth  [64M]");
  cmd.add_option("--pair-small-bytes", o.pair_small_bytes, "Pair matrix: message size for latency  [8]");
  cmd.add_option("--pairs", o.pairs, "Pair rounds: all, or sample:K for K of the N-1 rounds  [all]");
  cmd.add_option("--pair-full-limit", o.pair_full_limit,
                 "Above this many nodes, each node meets --pair-peers random others instead of all  [64]");
  cmd.add_option("--pair-peers", o.pair_peers, "Random pair rounds above --pair-full-limit nodes  [4]");
  cmd.add_option("--pair-seed", o.pair_seed, "Seed of the random node order above --pair-full-limit (not 0)  [1]");
  cmd.add_flag("--no-health", o.no_health, "run: skip the quick pass over node pairs before the sweep");
  cmd.add_option("--outlier-mads", o.outlier_mads, "Findings: scaled MADs below the median to flag  [4]");
  cmd.add_option("--outlier-drop", o.outlier_drop, "Findings: fraction below the median to flag, 0..1  [0.5]");
}

void add_decision_options(CLI::App& cmd, RawOptions& o) {
  cmd.add_option("--expect", o.expects,
                 "Gate, repeatable: SUBJECT.METRIC[@ARG]CMP VALUE, e.g. 'allreduce.busbw>=350', "
                 "'allgather.busbw@64M>=100', 'scale.efficiency@2>=0.9', 'topo.h2d_gbs>=40' (failing: exit 3)");
  cmd.add_flag("--expect-reference", o.expect_reference,
               "Gate on the built-in reference figures for the detected hardware (FAIL: exit 3)");
  cmd.add_flag("--fail-on-warn", o.fail_on_warn, "Exit 1 when the verdict is WARN");
  cmd.add_option("--price-per-gpu-hour", o.price_per_gpu_hour, "Price of one GPU for an hour (any currency), for cost");
  cmd.add_option("--price-per-node-hour", o.price_per_node_hour, "Price of one node for an hour, for cost");
}

void apply_decision_options(const RawOptions& o, ReportConfig& report) {
  report.expects = o.expects;
  report.expect_reference = o.expect_reference;
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
}

// `--profile smoke`: a short one-node suite for CI. Only the options the
// person did not give are set, so the profile can be narrowed further.
void apply_profile(const CLI::App& cmd, RawOptions& o) {
  if (o.profile.empty()) return;
  if (o.profile != "smoke")
    throw UsageError(fmt::format("--profile: unknown profile '{}' (choose from smoke)", o.profile));
  const auto unset = [&cmd](const char* flag) { return cmd.count(flag) == 0; };
  if (unset("--sizes") && unset("--min-bytes") && unset("--max-bytes") && unset("--step-factor")) {
    o.min_bytes = "16";
    o.max_bytes = "16M";
    o.step_factor = 4;
    o.step_given = true;
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
  o.no_check = false;
}

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

std::size_t size_value(const std::string& flag, const std::string& text) {
  const auto value = parse_size(text);
  if (!value) throw UsageError(fmt::format("{}: '{}' is not a size (bytes, or a K/M/G suffix, e.g. 64M)", flag, text));
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
    if (opt->count() == 0 || opt->get_type_size() == 0) continue;
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
  if (o.params > 0) {
    const auto dtype = parse_dtype(o.grad_dtype);
    if (!dtype) throw UsageError(fmt::format("--grad-dtype: unknown dtype '{}'", o.grad_dtype));
    if (o.params < 1 || std::floor(o.params) != o.params)
      throw UsageError(fmt::format("--params {}: must be a whole number of parameters, 1 or more", o.params));
    if (o.params * static_cast<double>(element_size(*dtype)) > static_cast<double>(max_message_bytes))
      throw UsageError(fmt::format("--params {}: the gradients would be above the largest message size, {}", o.params,
                                   format_size(max_message_bytes)));
    scale.grad_bytes = static_cast<std::size_t>(o.params) * element_size(*dtype);
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

RunConfig to_config(const RawOptions& o, Command command) {
  RunConfig c;
  c.command = command;
  if (o.transport == "auto")
    c.transport = TransportChoice::automatic;
  else if (o.transport == "nccl")
    c.transport = TransportChoice::nccl;
  else if (o.transport == "mpi")
    c.transport = TransportChoice::mpi;
  else
    throw UsageError(fmt::format("--transport: unknown transport '{}' (choose from auto, nccl, mpi)", o.transport));

  if (!o.ops.empty()) c.ops = parse_list<Op>("--ops", o.ops, parse_op, all_ops(), "op");
  if (!o.dtypes.empty()) c.dtypes = parse_list<DType>("--dtype", o.dtypes, parse_dtype, all_dtypes(), "dtype");
  if (!o.redops.empty()) {
    static const std::vector<RedOp> redops{RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg};
    c.redops = parse_list<RedOp>("--redop", o.redops, parse_redop, redops, "redop");
  }

  if (!o.sizes.empty()) {
    if (!o.min_bytes.empty() || !o.max_bytes.empty() || o.step_given)
      throw UsageError("--sizes: cannot be combined with -b/--min-bytes, -e/--max-bytes or -f/--step-factor");
    for (const std::string& item : split_list(o.sizes)) {
      const std::size_t bytes = size_value("--sizes", item);
      require_whole_elements("--sizes", bytes, c.dtypes);
      c.sizes.push_back(bytes);
    }
    if (c.sizes.size() > max_ladder_sizes)
      throw UsageError(
          fmt::format("--sizes: {} sizes, more than the {} one sweep may have", c.sizes.size(), max_ladder_sizes));
    std::sort(c.sizes.begin(), c.sizes.end());
    c.sizes.erase(std::unique(c.sizes.begin(), c.sizes.end()), c.sizes.end());
  } else {
    const std::string min_text = o.min_bytes.empty() ? default_min_bytes : o.min_bytes;
    const std::string max_text = o.max_bytes.empty() ? default_max_bytes : o.max_bytes;
    const std::size_t lo = size_value("-b/--min-bytes", min_text);
    const std::size_t hi = size_value("-e/--max-bytes", max_text);
    if (lo > hi) throw UsageError(fmt::format("-b/--min-bytes {} is above -e/--max-bytes {}", min_text, max_text));
    if (!(o.step_factor > 1.0)) throw UsageError(fmt::format("-f/--step-factor {} must be above 1", o.step_factor));
    if (!std::isfinite(o.step_factor))
      throw UsageError(fmt::format("-f/--step-factor {} must be a finite number above 1", o.step_factor));
    require_whole_elements("-b/--min-bytes", lo, c.dtypes);
    require_whole_elements("-e/--max-bytes", hi, c.dtypes);
    c.sizes = size_ladder(lo, hi, o.step_factor, widest_element(c.dtypes));
    if (c.sizes.size() > max_ladder_sizes)
      throw UsageError(
          fmt::format("-f/--step-factor {}: the ladder from {} to {} would have more than {} sizes; use a "
                      "larger factor or --sizes",
                      o.step_factor, min_text, max_text, max_ladder_sizes));
  }

  if (o.root < 0) throw UsageError(fmt::format("--root {}: must be 0 or above", o.root));
  c.root = o.root;
  if (o.warmup < 0) throw UsageError(fmt::format("--warmup {}: must be 0 or above", o.warmup));
  if (o.iters_given && o.iters < 1) throw UsageError(fmt::format("--iters {}: must be 1 or above", o.iters));
  if (!(o.min_time_ms > 0.0) || !std::isfinite(o.min_time_ms))
    throw UsageError(fmt::format("--min-time-ms {}: must be a finite number above 0", o.min_time_ms));
  if (o.min_iters < 1) throw UsageError(fmt::format("--min-iters {}: must be 1 or above", o.min_iters));
  if (o.max_iters < o.min_iters)
    throw UsageError(fmt::format("--max-iters {} is below --min-iters {}", o.max_iters, o.min_iters));
  if (!(o.precision_pct >= 0.0) || o.precision_pct >= 100.0)
    throw UsageError(fmt::format("--precision {}: must be a percentage from 0 (off) to below 100", o.precision_pct));
  if (!(o.max_time_ms > 0.0) || !std::isfinite(o.max_time_ms))
    throw UsageError(fmt::format("--max-time-ms {}: must be above 0", o.max_time_ms));
  c.iterations = {o.warmup, o.iters, o.min_time_ms, o.min_iters, o.max_iters, o.precision_pct / 100.0, o.max_time_ms};
  if (!o.budget.empty()) {
    c.budget_s = parse_duration_s(o.budget);
    if (!c.budget_s)
      throw UsageError(
          fmt::format("--budget: '{}' is not a duration above 0 (seconds, or with s, m or h: 90s, 5m)", o.budget));
  }
  c.health = !o.no_health;
  if (o.check_given && o.no_check) throw UsageError("--check: cannot be combined with --no-check (give one of them)");
  c.check = !o.no_check;

  if (o.inplace == "both")
    c.inplace = InPlaceChoice::both;
  else if (o.inplace == "only")
    c.inplace = InPlaceChoice::only;
  else if (o.inplace == "no")
    c.inplace = InPlaceChoice::no;
  else
    throw UsageError(fmt::format("--inplace: unknown choice '{}' (choose from both, only, no)", o.inplace));

  c.json_path = o.json;
  c.csv_path = o.csv;
  for (const char ch : o.label)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      throw UsageError("--label: must not hold control characters");
  c.label = o.label;
  c.quiet = o.quiet;
  if (o.progress == "auto")
    c.progress = ProgressChoice::automatic;
  else if (o.progress == "on")
    c.progress = ProgressChoice::on;
  else if (o.progress == "off")
    c.progress = ProgressChoice::off;
  else
    throw UsageError(fmt::format("--progress: unknown choice '{}' (choose from auto, on, off)", o.progress));
  if (o.gpus < 0) throw UsageError(fmt::format("--gpus {}: must be 1 or above", o.gpus));
  // A week: long enough for any step, short enough that milliseconds fit.
  constexpr double longest_timeout_s = 7 * 24 * 3600;
  if (!(o.timeout_s > 0.0)) throw UsageError(fmt::format("--timeout {}: must be above 0 seconds", o.timeout_s));
  if (!(o.timeout_s <= longest_timeout_s))
    throw UsageError(fmt::format("--timeout {}: must be at most {} seconds", o.timeout_s, longest_timeout_s));
  c.gpu = {o.gpus, o.allow_shared_gpu, o.graph, o.timeout_s};
  c.sysfs_root = o.sysfs_root;
  c.procfs_root = o.procfs_root;
  c.measure_topology = !o.no_measure;
  apply_scale_options(o, c.scale);
  apply_pair_options(o, c.pairs);
  return c;
}

}  // namespace

ParseOutcome parse_command_line(const std::vector<std::string>& args) {
  CLI::App app{"fabricbench: GPU cluster interconnect benchmark (NCCL and MPI collectives, bus bandwidth)",
               "fabricbench"};
  app.require_subcommand(0, 1);
  RawOptions run_options;
  RawOptions sweep_options;
  RawOptions scale_options;
  RawOptions p2p_options;
  CLI::App* run = app.add_subcommand("run", "The full suite (default when no subcommand is given)");
  CLI::App* sweep = app.add_subcommand("sweep", "Collective sweeps over message sizes");
  CLI::App* scale = app.add_subcommand("scale", "Scaling ladder: bus bandwidth from 1 node to all nodes");
  CLI::App* p2p = app.add_subcommand("p2p", "Node-pair matrix: bandwidth and latency of every node pair, slow nodes");
  RawOptions topo_options;
  CLI::App* topo = app.add_subcommand("topo", "Topology: what is in each node and what differs from its peers");
  topo->add_option("--json", topo_options.json, "Write the result, with its topology section, as JSON to FILE");
  topo->add_flag("-q,--quiet", topo_options.quiet, "Print nothing but errors");
  add_topology_options(*topo, topo_options);
  CLI::App* version = app.add_subcommand("version", "Tool version, git hash, transports and library versions");
  RawOptions report_options;
  CLI::App* report = app.add_subcommand(
      "report", "Read result files: tables, verdicts, cost; compare runs; --csv, --html; gates for CI (no MPI needed)");
  report->add_option("files", report_options.files, "Result JSON files (several: compared; same cluster: aggregated)")
      ->required();
  report->add_option("--csv", report_options.csv, "Write CSV to FILE (one file: its records; several: the comparison)");
  report->add_option("--html", report_options.html, "Write a self-contained HTML page with charts to FILE");
  report->add_flag("-q,--quiet", report_options.quiet, "Print only the verdict line and errors");
  add_decision_options(*report, report_options);
  add_decision_options(*run, run_options);
  run->add_option("--profile", run_options.profile,
                  "smoke: a short suite for CI (16 B..16 MiB x4; allreduce, allgather, sendrecv; 5 ms per size; "
                  "data checked; ladder and pairs at 4 MiB; a 60 s --budget)");
  for (CLI::App* measuring : {sweep, scale, p2p}) {
    RawOptions* target = measuring == sweep ? &sweep_options : measuring == scale ? &scale_options : &p2p_options;
    measuring->add_option("--price-per-gpu-hour", target->price_per_gpu_hour,
                          "Price of one GPU for an hour (any currency), recorded for the report's cost");
    measuring->add_option("--price-per-node-hour", target->price_per_node_hour,
                          "Price of one node for an hour, recorded for the report's cost");
  }
  add_sweep_options(*run, run_options);
  add_scale_options(*run, run_options);
  add_pair_options(*run, run_options);
  add_topology_options(*run, run_options);
  add_sweep_options(*sweep, sweep_options);
  add_sweep_options(*scale, scale_options);
  add_scale_options(*scale, scale_options);
  add_sweep_options(*p2p, p2p_options);
  add_pair_options(*p2p, p2p_options);

  // No subcommand means `run`: options given without one belong to it.
  std::vector<std::string> argv = args;
  const bool names_subcommand = !argv.empty() && (argv[0] == "run" || argv[0] == "sweep" || argv[0] == "scale" ||
                                                  argv[0] == "p2p" || argv[0] == "topo" || argv[0] == "report" ||
                                                  argv[0] == "version" || argv[0] == "-h" || argv[0] == "--help");
  if (!names_subcommand) argv.insert(argv.begin(), "run");

  ParseOutcome outcome;
  try {
    std::vector<std::string> reversed(argv.rbegin(), argv.rend());
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    outcome.exit_now = true;
    outcome.text = app.help();
    for (CLI::App* sub : {run, sweep, scale, p2p, topo, version, report}) {
      if (sub->parsed()) outcome.text = sub->help();
    }
    return outcome;
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    if (const auto nl = message.find('\n'); nl != std::string::npos) message.resize(nl);
    throw UsageError(message);
  }

  outcome.config.command_line = args;
  if (version->parsed()) {
    outcome.config.command = Command::version;
    return outcome;
  }
  for (const CLI::App* sub : {run, sweep, scale, p2p, topo, report})
    if (sub->parsed()) refuse_empty_values(*sub);
  if (report->parsed()) {
    RunConfig c;
    c.command = Command::report;
    c.csv_path = report_options.csv;
    c.quiet = report_options.quiet;
    apply_decision_options(report_options, c.report);
    for (const std::string& e : c.report.expects) (void)parse_gate(e);
    c.command_line = args;
    outcome.config = std::move(c);
    return outcome;
  }
  apply_profile(*run, run_options);
  if (sweep->parsed())
    outcome.config = to_config(sweep_options, Command::sweep);
  else if (scale->parsed())
    outcome.config = to_config(scale_options, Command::scale);
  else if (p2p->parsed())
    outcome.config = to_config(p2p_options, Command::p2p);
  else if (topo->parsed()) {
    outcome.config = to_config(topo_options, Command::topo);
    // The probe moves no collective data; the host transport only fills the record.
    outcome.config.transport = TransportChoice::mpi;
  } else
    outcome.config = to_config(run_options, Command::run);
  const RawOptions& chosen = sweep->parsed()   ? sweep_options
                             : scale->parsed() ? scale_options
                             : p2p->parsed()   ? p2p_options
                             : topo->parsed()  ? topo_options
                                               : run_options;
  apply_decision_options(chosen, outcome.config.report);
  for (const std::string& e : outcome.config.report.expects) (void)parse_gate(e);
  outcome.config.command_line = args;
  return outcome;
}

void validate_for_world(const RunConfig& config, int nranks) {
  const bool rooted = std::any_of(config.ops.begin(), config.ops.end(), has_root);
  if (rooted && config.root >= nranks)
    throw UsageError(fmt::format("--root {}: there are only {} ranks (0 to {})", config.root, nranks, nranks - 1));
}

}  // namespace fabricbench
