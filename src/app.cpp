#include "fabricbench/app.hpp"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>

#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/build_info.hpp"
#include "fabricbench/cli.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/gpu_session.hpp"
#include "fabricbench/layout.hpp"
#include "fabricbench/mpi_transport.hpp"
#include "fabricbench/multinode.hpp"
#include "fabricbench/output.hpp"
#include "fabricbench/report.hpp"
#include "fabricbench/safe_file.hpp"
#include "fabricbench/sizes.hpp"
#include "fabricbench/sweep.hpp"
#include "fabricbench/text_safety.hpp"
#include "fabricbench/topology_analysis.hpp"
#include "fabricbench/topology_probe.hpp"
#include "fabricbench/topology_writers.hpp"
#include "fabricbench/verdict.hpp"
#include "fabricbench/watchdog.hpp"
#include "fabricbench/writers.hpp"

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace fabricbench {
namespace {

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// The variables that change how NCCL, UCX and Open MPI move data. Open MPI's
// own launch bookkeeping (OMPI_COMM_WORLD_*, OMPI_MCA_orte_*, ...) differs per
// rank and run and shapes nothing, so it is left out.
std::map<std::string, std::string> shaping_environment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = entry.substr(0, eq);
    bool keep = starts_with(key, "NCCL_") || starts_with(key, "UCX_") || key == "CUDA_VISIBLE_DEVICES";
    if (starts_with(key, "OMPI_MCA_")) {
      keep = !(starts_with(key, "OMPI_MCA_orte_") || starts_with(key, "OMPI_MCA_ess_") ||
               starts_with(key, "OMPI_MCA_pmix") || key == "OMPI_MCA_initial_wdir" ||
               starts_with(key, "OMPI_MCA_shmem_RUNTIME"));
    }
    if (keep) out.emplace(key, entry.substr(eq + 1));
  }
  return out;
}

// Runs `check` on rank 0 only (it looks at rank 0's file system) and makes
// every rank throw its UsageError, so the whole job exits 2 together.
void agree_on_root(const Comm& world, const std::function<void()>& check) {
  std::string message;
  if (world.rank() == 0) {
    try {
      check();
    } catch (const UsageError& e) {
      message = e.what();
    }
  }
  std::uint64_t length = world.broadcast_value<std::uint64_t>(message.size(), 0);
  if (length == 0) return;
  message.resize(length);
  world.broadcast(std::as_writable_bytes(std::span<char>(message.data(), message.size())), 0);
  throw UsageError(message);
}

// A one-line progress report on stderr (when wanted), and only once
// the run has lasted a couple of seconds.
class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled) {}
  void update(const SweepRecord& r, std::size_t done, std::size_t total) {
    if (!enabled_) return;
    if (std::chrono::steady_clock::now() - start_ < std::chrono::seconds(2)) return;
    std::cerr << fmt::format("\r\033[K[{}/{}] {} {} {}", done + 1, total, name(r.op), name(r.dtype),
                             format_size(r.bytes))
              << std::flush;
    shown_ = true;
  }
  void clear() {
    if (!shown_) return;
    // On stdout too: under mpirun the two streams reach the terminal through
    // separate pipes, so a clear on stderr alone may land after the next
    // table row; one on stdout is ordered with the row.
    std::cerr << "\r\033[K" << std::flush;
    std::cout << "\r\033[K";
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

void write_results(const RunConfig& config, const RunResult& result) {
  if (!config.json_path.empty())
    write_file_atomically(config.json_path, [&result](std::ostream& out) { write_json(result, out); });
  if (!config.csv_path.empty())
    write_file_atomically(config.csv_path, [&result](std::ostream& out) { write_csv(result.records, out); });
}

// What the lead rank saved last, for the watchdog: on a timeout or a signal
// it writes this again with complete: false and the reason. The mutex is
// held while either writes, so the watchdog's file is the last.
struct LastSaved {
  std::mutex mutex;
  RunResult result;
  std::chrono::steady_clock::time_point start;
};

// Saves with the wall time so far, so an interrupted run's file still says
// how long it ran (and so what it cost).
void save(const RunConfig& config, RunResult& result,
          std::chrono::steady_clock::time_point start = std::chrono::steady_clock::time_point{},
          LastSaved* last = nullptr) {
  if (start != std::chrono::steady_clock::time_point{})
    result.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::unique_lock<std::mutex> lock;
  if (last != nullptr) lock = std::unique_lock(last->mutex);
  write_results(config, result);
  if (last != nullptr) {
    last->result = result;
    last->start = start;
  }
}

// The watchdog's last words on the lead rank: the last save again, marked
// incomplete with the reason.
void install_last_words(Watchdog* watchdog, const RunConfig& config, LastSaved& last) {
  if (watchdog == nullptr) return;
  watchdog->set_last_words([&config, &last](const std::string& reason) {
    const std::lock_guard lock(last.mutex);
    RunResult result = last.result;
    result.complete = false;
    result.end_reason = reason;
    if (last.start != std::chrono::steady_clock::time_point{})
      result.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - last.start).count();
    write_results(config, result);
  });
}

// After the run, on rank 0: the verdicts a measuring command was asked for
// (--expect, --expect-reference, --fail-on-warn) and their exit code.
int judge_run(const RunConfig& config, const RunResult& result) {
  const ReportConfig& rc = config.report;
  if (rc.expects.empty() && !rc.expect_reference && !rc.fail_on_warn) return exit_ok;
  std::vector<Verdict> verdicts = health_verdicts(result);
  Level level = worst(verdicts);
  const std::vector<Verdict> refs = reference_verdicts(result, builtin_expectations());
  if (rc.expect_reference) level = std::max(level, worst(refs));
  verdicts.insert(verdicts.end(), refs.begin(), refs.end());
  for (const std::string& text : rc.expects) {
    verdicts.push_back(evaluate_gate(parse_gate(text), result));
    level = std::max(level, verdicts.back().level);
  }
  write_verdicts(verdicts, level, std::cout);
  std::cout << std::flush;
  return exit_code_for(level, rc.fail_on_warn);
}

int execute(const RunConfig& config, const Comm& world, Watchdog* watchdog = nullptr) {
  const bool lead = world.rank() == 0;
  const auto started = std::chrono::steady_clock::now();
  LastSaved last;
  // The last words refer to `last` and `config`: gone when execute returns.
  const std::unique_ptr<Watchdog, void (*)(Watchdog*)> forget(watchdog, [](Watchdog* w) {
    if (w != nullptr) w->set_last_words({});
  });
  Watchdog::note_phase("layout");
  const Layout layout = discover_layout(world);
  validate_for_world(config, world.size());
  if (config.command == Command::scale || config.command == Command::p2p ||
      (config.command == Command::run && layout.nodes > 1))
    (void)uniform_ranks_per_node(layout);  // refuse uneven layouts before anything runs
  agree_on_root(world, [&config] {
    if (!config.json_path.empty()) check_writable(config.json_path, "--json");
    if (!config.csv_path.empty()) check_writable(config.csv_path, "--csv");
    check_distinct_outputs({{"--json", config.json_path}, {"--csv", config.csv_path}}, {});
  });
  const std::unique_ptr<Transport> transport = make_transport_for(config, world, layout);
  validate_for_transport(config, *transport);
  // The NCCL transport has deadlines of its own on every wait and gives no
  // step notes; the watchdog then only ends the run on a signal.
  if (watchdog != nullptr && transport->name() != "mpi") watchdog->disarm_deadline();
  if (lead) install_last_words(watchdog, config, last);

  RunResult result;
  result.tool = tool_info();
  result.checked = config.check;
  RunInfo& info = result.run;
  info.start_utc = utc_now();
  info.command_line = config.command_line;
  info.command_line.insert(info.command_line.begin(), "fabricbench");
  info.ranks = layout.ranks;
  info.nodes = layout.nodes;
  info.ranks_per_node = layout.ranks_per_node;
  info.hostnames = layout.hostnames;
  info.transport = transport->name();
  GpuRecord gpu = gather_gpu_record(*transport, world);
  result.tool.libraries.merge(gpu.libraries);
  info.devices = std::move(gpu.devices);
  info.environment = shaping_environment();
  if (config.report.price_per_gpu_hour || config.report.price_per_node_hour)
    info.cost = PriceInfo{config.report.price_per_gpu_hour, config.report.price_per_node_hour};

  if (lead && !config.quiet) {
    std::cout << fmt::format("# fabricbench {} (git {}) transport {}: {} rank{} on {} node{}\n", result.tool.version,
                             result.tool.git, info.transport, info.ranks, info.ranks == 1 ? "" : "s", info.nodes,
                             info.nodes == 1 ? "" : "s");
    for (int n = 0; n < layout.nodes; ++n) {
      const int ranks = layout.ranks_per_node[static_cast<std::size_t>(n)];
      std::cout << fmt::format("#   node {} {}: {} rank{}\n", n, layout.hostnames[static_cast<std::size_t>(n)], ranks,
                               ranks == 1 ? "" : "s");
    }
  }
  // The topology comes first, before any collective runs.
  if (config.command == Command::topo || config.command == Command::run) {
    Watchdog::note_phase("topology");
    ClusterTopology topology = gather_topology(
        world, layout, TopologyOptions{probe_roots(config.sysfs_root, config.procfs_root), config.measure_topology});
    if (lead && !config.quiet) write_topology_summary(topology, std::cout);
    if (lead) result.topology = std::move(topology);
  }
  if (config.command == Command::topo) {
    if (!lead) return exit_ok;
    result.complete = true;
    save(config, result, started, &last);
    return exit_ok;
  }
  if (lead) save(config, result, started, &last);  // a valid (empty, incomplete) file from the start

  TableWriter table(std::cout);
  const bool progress_wanted = config.progress == ProgressChoice::on ||
                               (config.progress == ProgressChoice::automatic && isatty(STDERR_FILENO) != 0);
  Progress progress(lead && !config.quiet && progress_wanted);
  SweepListener listener;
  listener.on_progress = [&progress](const SweepRecord& r, std::size_t done, std::size_t total) {
    progress.update(r, done, total);
  };
  listener.on_point = [&](std::span<const SweepRecord> records) {
    progress.clear();
    if (!config.quiet) table.point(records);
    for (const SweepRecord& r : records) {
      result.records.push_back(r);
      if (r.timing && r.timing->wrong) result.wrong_total += *r.timing->wrong;
    }
  };
  listener.on_op_done = [&](Op) { save(config, result, started, &last); };

  const bool multi_node = layout.nodes > 1;
  const bool sweep = config.command == Command::sweep || config.command == Command::run;
  const bool ladder = config.command == Command::scale || (config.command == Command::run && multi_node);
  const bool pairs = config.command == Command::p2p ||
                     (config.command == Command::run && (multi_node || layout.ranks_per_node.front() > 1));
  Watchdog::note_phase("sweep");
  if (sweep) run_sweep(config, *transport, world, listener);
  progress.clear();
  if (ladder) {
    Watchdog::note_phase("ladder");
    // The NIC-bound ceiling needs the line rate: given, or from the topology
    // rank 0 gathered (every rank gets it, though only rank 0 analyses).
    RunConfig ladder_config = config;
    if (!ladder_config.scale.nic_gbit_per_node) {
      std::optional<double> known;
      if (lead && result.topology) known = network_gbit_per_node(*result.topology);
      const double rate = world.broadcast_value(known.value_or(0.0), 0);
      if (rate > 0) ladder_config.scale.nic_gbit_per_node = rate;
    }
    ScaleResult scaling = run_ladder(ladder_config, *transport, world, layout);
    if (lead) {
      for (const LevelResult& l : scaling.levels)
        for (const GroupResult& g : l.groups) result.wrong_total += g.wrong;
      if (!config.quiet) write_ladder(scaling, std::cout);
      result.scaling = std::move(scaling);
      save(config, result, started, &last);
    }
  }
  if (pairs) {
    Watchdog::note_phase("pairs");
    PairsResult matrix = run_pairs(config, *transport, world, layout);
    if (lead) {
      result.wrong_total += matrix.wrong;
      result.findings = find_outliers(matrix.nodes, matrix.hosts,
                                      OutlierThresholds{config.pairs.outlier_mads, config.pairs.outlier_drop});
      if (!config.quiet) {
        write_pairs(matrix, result.findings, std::cout);
      } else {
        for (const Finding& f : result.findings) std::cout << "# " << f.message << '\n';
      }
      result.pairs = std::move(matrix);
      save(config, result, started, &last);
    }
  }
  if (!lead) return exit_ok;
  result.complete = true;
  save(config, result, started, &last);
  if (watchdog != nullptr) watchdog->set_last_words({});  // complete: nothing to take back
  if (sweep) table.summary(result);
  const int judged = judge_run(config, result);
  if (!data_ok(result)) {
    std::cerr << fmt::format("fabricbench: {} wrong elements: the data check failed\n", result.wrong_total);
    return exit_failed;
  }
  return judged;
}

}  // namespace

int launcher_rank() {
  for (const char* key : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(key)) return std::atoi(value);
  }
  return 0;
}

std::unique_ptr<Transport> make_transport(TransportChoice choice, const Comm& comm) {
  if (choice == TransportChoice::nccl)
    throw UsageError(
        "--transport nccl: this build has no NCCL transport (built without CUDA and NCCL); "
        "use --transport mpi");
#if FABRICBENCH_HAVE_MPI
  return std::make_unique<MpiTransport>(comm);
#else
  (void)comm;
  throw UsageError("no transport: this build has neither MPI nor NCCL (configure with FABRICBENCH_MPI=ON)");
#endif
}

void validate_for_transport(const RunConfig& config, const Transport& transport) {
  for (const DType dtype : config.dtypes) {
    if (auto why = transport.unsupported(Op::allgather, dtype, RedOp::sum))
      throw UsageError(fmt::format("--dtype {}: {}", name(dtype), *why));
  }
  if (!std::any_of(config.ops.begin(), config.ops.end(), reduces)) return;
  for (const RedOp redop : config.redops) {
    if (auto why = transport.unsupported(Op::allreduce, DType::float32, redop))
      throw UsageError(fmt::format("--redop {}: {}", name(redop), *why));
  }
}

int run_measurements(int* argc, char*** argv, const RunConfig& config) {
  if (wants_local_group(config)) {
    if (launcher_rank() != 0 || std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) {  // NOLINT(concurrency-mt-unsafe)
      std::cerr << "fabricbench: error: --gpus is for one process without a launcher; under mpirun run one rank "
                   "per GPU\n";
      return exit_usage;
    }
    return run_local_group(config, [&config](const Comm& comm) { return execute(config, comm); });
  }
  const MpiSession session(argc, argv);
  const Comm world = Comm::world();
  const bool lead = world.rank() == 0;
  // MPI calls wait without a deadline: the watchdog gives them one, and ends
  // the run on SIGINT and SIGTERM with the files saved.
  Watchdog watchdog(std::chrono::milliseconds(static_cast<std::int64_t>(config.gpu.timeout_s * 1000.0)),
                    this_hostname(), world.rank(), lead, exit_error, exit_interrupted);
  try {
    return execute(config, world, &watchdog);
  } catch (const UsageError& e) {
    // Raised on every rank alike; one line from rank 0.
    if (lead) std::cerr << "fabricbench: error: " << terminal_safe(e.what()) << '\n';
    return exit_usage;
  } catch (const std::exception& e) {
    std::cerr << fmt::format("fabricbench: error on {} rank {}: {}\n", this_hostname(), world.rank(),
                             terminal_safe(e.what()));
    if (world.size() > 1) world.abort(exit_error);
    return exit_error;
  }
}

}  // namespace fabricbench
