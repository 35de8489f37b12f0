#include "fabricbench/cli.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fabricbench/error.hpp"
#include "fabricbench/sizes.hpp"

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
  double min_time_ms = 20.0;
  int min_iters = 5;
  int max_iters = 10000;
  bool no_check = false;
  std::string inplace = "both";
  std::string json;
  std::string csv;
  bool quiet = false;
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
                 "Element types, comma separated: float, double, int32, int64, int8, uint8, half, bfloat16  [float]");
  cmd.add_option("--redop", o.redops, "Reductions, comma separated: sum, prod, min, max, avg (nccl only)  [sum]");
  cmd.add_option("--root", o.root, "Root rank of broadcast and reduce  [0]");
  cmd.add_option("--warmup", o.warmup, "Warm-up iterations before each measurement  [5]");
  cmd.add_option("--iters", o.iters, "Fixed number of timed iterations (default: adaptive)");
  cmd.add_option("--min-time-ms", o.min_time_ms, "Adaptive iterations: time to fill per size and placement  [20]");
  cmd.add_option("--min-iters", o.min_iters, "Adaptive iterations: lower bound  [5]");
  cmd.add_option("--max-iters", o.max_iters, "Adaptive iterations: upper bound  [10000]");
  cmd.add_flag("--check,!--no-check", [&o](std::int64_t count) { o.no_check = count < 0; },
               "Verify every result element (on by default; --no-check skips)");
  cmd.add_option("--inplace", o.inplace, "Placements to measure: both | only | no  [both]");
  cmd.add_option("--json", o.json, "Write the results as JSON to FILE (rewritten after each op)");
  cmd.add_option("--csv", o.csv, "Write the results as CSV to FILE");
  cmd.add_flag("-q,--quiet", o.quiet, "Print no table, only the summary and errors");
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
  return *value;
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

RunConfig to_config(const RawOptions& o, Command command) {
  RunConfig c;
  c.command = command;
  if (o.transport == "auto") c.transport = TransportChoice::automatic;
  else if (o.transport == "nccl") c.transport = TransportChoice::nccl;
  else if (o.transport == "mpi") c.transport = TransportChoice::mpi;
  else throw UsageError(fmt::format("--transport: unknown transport '{}' (choose from auto, nccl, mpi)", o.transport));

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
    std::sort(c.sizes.begin(), c.sizes.end());
    c.sizes.erase(std::unique(c.sizes.begin(), c.sizes.end()), c.sizes.end());
  } else {
    const std::string min_text = o.min_bytes.empty() ? default_min_bytes : o.min_bytes;
    const std::string max_text = o.max_bytes.empty() ? default_max_bytes : o.max_bytes;
    const std::size_t lo = size_value("-b/--min-bytes", min_text);
    const std::size_t hi = size_value("-e/--max-bytes", max_text);
    if (lo > hi)
      throw UsageError(fmt::format("-b/--min-bytes {} is above -e/--max-bytes {}", min_text, max_text));
    if (!(o.step_factor > 1.0))
      throw UsageError(fmt::format("-f/--step-factor {} must be above 1", o.step_factor));
    require_whole_elements("-b/--min-bytes", lo, c.dtypes);
    require_whole_elements("-e/--max-bytes", hi, c.dtypes);
    c.sizes = size_ladder(lo, hi, o.step_factor, widest_element(c.dtypes));
  }

  if (o.root < 0) throw UsageError(fmt::format("--root {}: must be 0 or above", o.root));
  c.root = o.root;
  if (o.warmup < 0) throw UsageError(fmt::format("--warmup {}: must be 0 or above", o.warmup));
  if (o.iters < 0) throw UsageError(fmt::format("--iters {}: must be 1 or above", o.iters));
  if (!(o.min_time_ms > 0.0)) throw UsageError(fmt::format("--min-time-ms {}: must be above 0", o.min_time_ms));
  if (o.min_iters < 1) throw UsageError(fmt::format("--min-iters {}: must be 1 or above", o.min_iters));
  if (o.max_iters < o.min_iters)
    throw UsageError(fmt::format("--max-iters {} is below --min-iters {}", o.max_iters, o.min_iters));
  c.iterations = {o.warmup, o.iters, o.min_time_ms, o.min_iters, o.max_iters};
  c.check = !o.no_check;

  if (o.inplace == "both") c.inplace = InPlaceChoice::both;
  else if (o.inplace == "only") c.inplace = InPlaceChoice::only;
  else if (o.inplace == "no") c.inplace = InPlaceChoice::no;
  else throw UsageError(fmt::format("--inplace: unknown choice '{}' (choose from both, only, no)", o.inplace));

  c.json_path = o.json;
  c.csv_path = o.csv;
  c.quiet = o.quiet;
  return c;
}

}  // namespace

ParseOutcome parse_command_line(const std::vector<std::string>& args) {
  CLI::App app{"fabricbench: GPU cluster interconnect benchmark (NCCL and MPI collectives, bus bandwidth)",
               "fabricbench"};
  app.require_subcommand(0, 1);
  RawOptions run_options;
  RawOptions sweep_options;
  CLI::App* run = app.add_subcommand("run", "The full suite (default when no subcommand is given)");
  CLI::App* sweep = app.add_subcommand("sweep", "Collective sweeps over message sizes");
  CLI::App* version = app.add_subcommand("version", "Tool version, git hash, transports and library versions");
  add_sweep_options(*run, run_options);
  add_sweep_options(*sweep, sweep_options);

  // No subcommand means `run`: options given without one belong to it.
  std::vector<std::string> argv = args;
  const bool names_subcommand =
      !argv.empty() && (argv[0] == "run" || argv[0] == "sweep" || argv[0] == "version" || argv[0] == "-h" ||
                        argv[0] == "--help");
  if (!names_subcommand) argv.insert(argv.begin(), "run");

  ParseOutcome outcome;
  try {
    std::vector<std::string> reversed(argv.rbegin(), argv.rend());
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    outcome.exit_now = true;
    outcome.text = app.help();
    for (CLI::App* sub : {run, sweep, version}) {
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
  const bool is_sweep = sweep->parsed();
  outcome.config = to_config(is_sweep ? sweep_options : run_options, is_sweep ? Command::sweep : Command::run);
  outcome.config.command_line = args;
  return outcome;
}

void validate_for_world(const RunConfig& config, int nranks) {
  const bool rooted = std::any_of(config.ops.begin(), config.ops.end(), has_root);
  if (rooted && config.root >= nranks)
    throw UsageError(fmt::format("--root {}: there are only {} ranks (0 to {})", config.root, nranks, nranks - 1));
}

}  // namespace fabricbench
