#include "fabricbench/app/app.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>

#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/analysis/ladders.hpp"
#include "fabricbench/analysis/pairs.hpp"
#include "fabricbench/analysis/report.hpp"
#include "fabricbench/analysis/storage.hpp"
#include "fabricbench/analysis/stragglers.hpp"
#include "fabricbench/analysis/topology_analysis.hpp"
#include "fabricbench/analysis/verdict.hpp"
#include "fabricbench/analysis/wire_rate.hpp"
#include "fabricbench/app/build_info.hpp"
#include "fabricbench/app/cli.hpp"
#include "fabricbench/app/exit_status.hpp"
#include "fabricbench/app/gpu_session.hpp"
#include "fabricbench/comm/layout.hpp"
#include "fabricbench/core/budget.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/core/json_fields.hpp"
#include "fabricbench/core/safe_file.hpp"
#include "fabricbench/core/signal_relay.hpp"
#include "fabricbench/core/sizes.hpp"
#include "fabricbench/core/watchdog.hpp"
#include "fabricbench/engine/gpu_ladder.hpp"
#include "fabricbench/engine/model_parallel.hpp"
#include "fabricbench/engine/multinode.hpp"
#include "fabricbench/engine/p2p_sweep.hpp"
#include "fabricbench/engine/storage.hpp"
#include "fabricbench/engine/stragglers.hpp"
#include "fabricbench/engine/sweep.hpp"
#include "fabricbench/output/file_writers.hpp"
#include "fabricbench/output/output.hpp"
#include "fabricbench/output/printer.hpp"
#include "fabricbench/results/result_json.hpp"
#include "fabricbench/topology/topology_probe.hpp"
#include "fabricbench/transport/nccl_log.hpp"

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
  message = world.broadcast_bytes(std::move(message), 0);
  if (!message.empty()) throw UsageError(message);
}

// -q silences the automatic progress line, not one asked for by name.
bool progress_wanted(const RunConfig& config) {
  return config.progress == ProgressChoice::on ||
         (config.progress == ProgressChoice::automatic && !config.quiet && isatty(STDERR_FILENO) != 0);
}

void write_results(const RunConfig& config, const RunResult& result) {
  if (!config.json_path.empty())
    write_file_atomically(config.json_path, [&result](std::ostream& out) { write_json(result, out); });
  if (!config.csv_path.empty()) {
    write_file_atomically(config.csv_path, [&result](std::ostream& out) { write_csv(result, out); });
    write_section_csv_files(config.csv_path, result);
  }
}

// What the lead rank saved last, for the watchdog: on a timeout or a signal
// it writes this again with complete: false and the reason. The mutex guards
// the copy only, never a write: a write of the main thread's that the
// watchdog's overtakes is dropped at its rename, and that thread then waits
// for the end (begin_final_writes), so the watchdog's file is the last.
struct LastSaved {
  std::mutex mutex;
  RunResult result;
  std::chrono::steady_clock::time_point start;
  // The reason the watchdog saved with (the launcher's notice that it ends
  // the job, or the end itself): the main thread's saves after it carry it
  // too, and a save of theirs begun before it is dropped at its rename
  // (supersede_writes), so none that lands after the notice's drops it.
  std::string reason;
  // Until when nothing more is written after that save (what is measured is
  // still remembered): Open MPI's SIGTERM comes a second after its SIGCONT
  // and the SIGKILL within milliseconds of the SIGTERM, and a write the
  // SIGKILL cuts between naming its file and the rename leaves that name
  // behind. A job that goes on after the hold saves again as before.
  std::chrono::steady_clock::time_point hold_until;
};

// Seconds the saves wait after the lead saved the launcher's notice: the
// SIGTERM and the SIGKILL follow within about a second.
constexpr double notice_hold_s = 5.0;

bool holding(const LastSaved& last) { return std::chrono::steady_clock::now() < last.hold_until; }

// What the watchdog's last words would write now (the result with its wall
// time so far and its verdicts), without writing it: kept after every point,
// so an interrupt saves every point that finished. Returns the reason the
// watchdog saved with, if it did, and whether the saves are held after it.
struct Remembered {
  std::string reason;
  bool held = false;
};

Remembered remember(const RunConfig& config, RunResult& result, std::chrono::steady_clock::time_point start,
                    LastSaved& last) {
  result.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The file carries its verdicts, as `report` would judge it now.
  result.verdicts = judge_run(result, config.report, expectations_with(config.report.expectations_text)).verdicts;
  const std::lock_guard lock(last.mutex);
  last.result = result;
  last.start = start;
  return {last.reason, holding(last)};
}

// Saves with the wall time so far, so an interrupted run's file still says
// how long it ran (and so what it cost). `kept` runs once the result is kept
// for the last words and before it is written: a row printed there is in the
// file an interrupt leaves, and the result is judged once for both.
void save(const RunConfig& config, RunResult& result, std::chrono::steady_clock::time_point start, LastSaved& last,
          const std::function<void()>& kept = {}) {
  // Taken before the reason is read: a notice that comes after drops this
  // save at its rename (its own save holds this result and the reason).
  const ContentSnapshot snapshot;
  const Remembered remembered = remember(config, result, start, last);
  if (kept) kept();
  if (remembered.reason.empty() || result.complete) {
    write_results(config, result);
    return;
  }
  if (remembered.held) return;
  RunResult noticed = result;
  noticed.end_reason = remembered.reason;
  write_results(config, noticed);
}

// The watchdog's last words on the lead rank: the last save again, marked
// incomplete with the reason.
void install_last_words(Watchdog* watchdog, const RunConfig& config, LastSaved& last) {
  if (watchdog == nullptr) return;
  watchdog->set_last_words([&config, &last](const std::string& reason) {
    RunResult result;
    std::chrono::steady_clock::time_point start;
    {
      const std::lock_guard lock(last.mutex);
      // The launcher's SIGTERM a second after the SIGCONT that saved this
      // reason: the file says it, and a write now would race the SIGKILL
      // (what was measured in that second is not saved, and the wall time
      // is the SIGCONT's).
      if (last.reason == reason && holding(last)) return;
      result = last.result;
      start = last.start;
      last.reason = reason;
      last.hold_until =
          std::chrono::steady_clock::now() +
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(notice_hold_s));
    }
    // After the reason is set: every save begun before is dropped, every
    // later one reads the reason.
    supersede_writes();
    result.complete = false;
    result.end_reason = reason;
    if (start != std::chrono::steady_clock::time_point{})
      result.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    write_results(config, result);
  });
}

// The quick health pass: the medium message and the timed iterations per
// size (after one warm-up). 1 MiB rather than less: a shaped link (a token
// bucket) lets its burst through at full speed, so a message must be well
// above the burst for the link's rate to show.
constexpr std::size_t health_bytes = std::size_t{1} << 20;
constexpr int health_iterations = 3;

// A latency suspect's second pass: its small message in this many bursts
// (run_pair_checks), its latency the fastest. Where ranks share cores, a
// healthy link's one burst measured 35 us beside 6 us ones, and was
// confirmed a slow link.
constexpr int latency_confirmation_bursts = 3;

// A link suspect's second pass: the rounds this many times over, its
// bandwidth the fastest (run_pair_checks). Where ranks share cores, a
// healthy pair ran at a fifteenth to a twentieth of its rate in the first
// pass and again in the second, and was confirmed a slow link.
constexpr int link_confirmation_bursts = 3;

// One measuring command on every rank, as named phases: start (layout, checks,
// transport, the run's record), topology, health, sweep, ladder, pairs (each
// with its share of a --budget), then on rank 0
// judge and save. Only rank 0 keeps the result; it is saved once as each
// phase ends (the budgeted ones in run_phase), within the sweep after each
// op and the p2p sweep after each size; every point is kept for the
// watchdog's last words, so an interrupted run's file holds every point that
// finished. Everything it shows goes through its printers.
class RunPipeline {
 public:
  // `watchdog` (may be null) gets the phases, and on the lead rank the last
  // save as its last words, for the life of run(). `printers` get every
  // section (on ranks other than the lead they are none).
  RunPipeline(const RunConfig& config, const Comm& world, Watchdog* watchdog, Printer& printers)
      : config_(config), world_(world), watchdog_(watchdog), printers_(printers) {}
  RunPipeline(const RunPipeline&) = delete;
  RunPipeline& operator=(const RunPipeline&) = delete;
  ~RunPipeline() {
    if (watchdog_ != nullptr) watchdog_->set_last_words({});  // they refer to this pipeline
  }

  int run() {
    start();
    if (config_.command == Command::run) {
      // The phases this run will go through, for "[2/5]" as each starts.
      phases_total_ = 1 + static_cast<int>(wants_health()) + static_cast<int>(wants_sweep()) +
                      static_cast<int>(wants_ladder()) + static_cast<int>(wants_gpu_ladder()) +
                      static_cast<int>(wants_pairs()) + static_cast<int>(config_.model.enabled()) +
                      static_cast<int>(wants_bisection()) + static_cast<int>(wants_storage());
      announce("topology",
               config_.measure_topology ? "each node's GPUs, PCIe, NVLink and NICs, and its copy bandwidths"
                                        : "each node's GPUs, PCIe, NVLink and NICs",
               unlimited_seconds);
    }
    topology();
    if (config_.command == Command::topo) {
      if (lead_) finish();
      return exit_ok;
    }
    if (lead_ && config_.budget_s) result_.budget = BudgetRecord{*config_.budget_s, std::nullopt, {}, {}};
    if (lead_) save(config_, result_, started_, last_);  // a valid (empty, incomplete) file from the start
    // The earliest useful answer first: a quick pass over node pairs names a
    // slow host within seconds, before the sweeps, the ladder and the full
    // matrix spend the rest of the budget.
    std::vector<Phase> planned;
    if (wants_health()) planned.push_back(Phase::health);
    if (wants_sweep()) planned.push_back(Phase::sweep);
    if (wants_ladder()) planned.push_back(Phase::ladder);
    if (wants_gpu_ladder()) planned.push_back(Phase::gpu_ladder);
    if (wants_pairs()) planned.push_back(Phase::pairs);
    for (std::size_t i = 0; i < planned.size(); ++i) {
      const std::vector<Phase> later(planned.begin() + static_cast<std::ptrdiff_t>(i) + 1, planned.end());
      run_phase(planned[i], later);
    }
    // The world communicator has made its connections (the sweep's warm-ups).
    nccl_usage();
    // p2p --sweep runs alone (its command has no other phase).
    if (wants_p2p_sweep()) p2p_sweep();
    if (config_.model.enabled()) model_parallel();
    // Placement and storage come after the budgeted phases and are not part
    // of the budget's shares.
    if (wants_bisection()) bisection();
    if (wants_storage()) storage();
    if (!lead_) return exit_ok;
    finish();
    if (result_.budget) printers_.budget(*result_.budget, result_.duration_s);
    return judge();
  }

 private:
  [[nodiscard]] bool multi_node() const { return layout_.nodes > 1; }
  [[nodiscard]] bool wants_sweep() const {
    return config_.command == Command::sweep || config_.command == Command::run;
  }
  [[nodiscard]] bool wants_ladder() const {
    return config_.command == Command::scale || (config_.command == Command::run && multi_node());
  }
  [[nodiscard]] bool wants_health() const { return config_.command == Command::run && multi_node() && config_.health; }
  // Inside each node, on `run` and `scale`, when a node has several ranks.
  [[nodiscard]] bool wants_gpu_ladder() const {
    return (config_.command == Command::scale || config_.command == Command::run) && config_.scale.gpu_ladder &&
           layout_.ranks_per_node.front() > 1;
  }
  [[nodiscard]] bool wants_p2p_sweep() const { return config_.command == Command::p2p && config_.p2p_sweep.enabled; }
  [[nodiscard]] bool wants_pairs() const {
    return (config_.command == Command::p2p && !config_.p2p_sweep.enabled) ||
           (config_.command == Command::run && (multi_node() || layout_.ranks_per_node.front() > 1));
  }
  // Half against half means something from 4 nodes on (2 or 3 give one pair).
  [[nodiscard]] bool wants_bisection() const {
    // Not within a --budget: the halvings are no part of its shares, and a
    // budgeted run (the smoke profile) must end in time.
    return config_.placement.bisection_halvings > 0 && layout_.nodes >= 4 && !config_.budget_s &&
           ((config_.command == Command::p2p && !config_.p2p_sweep.enabled) || config_.command == Command::run);
  }
  [[nodiscard]] bool wants_storage() const {
    return config_.command == Command::storage || (config_.command == Command::run && !config_.storage.path.empty());
  }

  // Refuses what cannot run before anything runs, then starts the transport
  // and records what, where and with what the run ran.
  void start() {
    Watchdog::note_phase("layout");
    layout_ = discover_layout(world_);
    validate_for_world(config_, world_.size());
    if (wants_p2p_sweep()) (void)p2p_sweep_ranks(config_.p2p_sweep, layout_);  // a pair that exists
    if (config_.command == Command::scale || (config_.command == Command::p2p && !wants_p2p_sweep()) ||
        (config_.command == Command::run && multi_node()) || wants_gpu_ladder())
      (void)uniform_ranks_per_node(layout_);  // refuse uneven layouts before anything runs
    check_model_parallel_layout(config_.model, layout_);
    if (wants_storage()) {  // the folder as every rank sees it, before anything runs
      for (const std::string& problem : world_.allgather(storage_path_problem(config_.storage.path)))
        if (!problem.empty()) throw UsageError(problem);
    }
    agree_on_root(world_, [this] {
      if (!config_.json_path.empty()) check_writable(config_.json_path, "--json");
      if (!config_.csv_path.empty()) check_writable(config_.csv_path, "--csv");
      std::vector<NamedOutput> outputs = csv_outputs(config_.csv_path);
      outputs.push_back({"--json", config_.json_path});
      check_distinct_outputs(outputs, {});
    });
    transport_ = make_transport_for(config_, world_, layout_);
    validate_for_transport(config_, *transport_);
    // The NCCL transport has deadlines of its own on every wait and gives no
    // step notes; the watchdog then only ends the run on a signal.
    if (watchdog_ != nullptr && transport_->name() != "mpi") watchdog_->disarm_deadline();
    if (lead_) install_last_words(watchdog_, config_, last_);
    record_run();
    if (lead_) printers_.header(result_.tool, result_.run);
  }

  void record_run() {
    result_.tool = tool_info();
    result_.checked = config_.check;
    RunInfo& info = result_.run;
    info.start_utc = utc_now();
    info.label = config_.label;
    info.command_line = config_.command_line;
    info.command_line.insert(info.command_line.begin(), "fabricbench");
    info.ranks = layout_.ranks;
    info.nodes = layout_.nodes;
    info.ranks_per_node = layout_.ranks_per_node;
    info.hostnames = layout_.hostnames;
    info.rank_nodes = layout_.node_of_rank;
    info.transport = transport_->name();
    GpuRecord gpu = gather_gpu_record(*transport_, world_);
    result_.tool.libraries.merge(gpu.libraries);
    info.devices = std::move(gpu.devices);
    info.environment = shaping_environment();
    if (wants_sweep() || config_.command == Command::scale) info.rank_time = config_.rank_time;
    if (config_.report.price_per_gpu_hour || config_.report.price_per_node_hour)
      info.cost = PriceInfo{config_.report.price_per_gpu_hour, config_.report.price_per_node_hour,
                            config_.report.currency.empty() ? std::string(default_currency) : config_.report.currency};
  }

  // The topology comes first, before any collective runs.
  void topology() {
    if (config_.command != Command::topo && config_.command != Command::run) return;
    Watchdog::note_phase("topology");
    ClusterTopology topology = gather_topology(
        world_, layout_,
        TopologyOptions{probe_roots(config_.sysfs_root, config_.procfs_root), config_.measure_topology});
    if (!lead_) return;
    judge_cluster(topology);
    printers_.topology(topology);
    result_.topology = std::move(topology);
  }

  // One phase with its share of the budget (read on rank 0), timed, with
  // what it cut printed as it ends, then saved: the phase's one save.
  void run_phase(Phase phase, const std::vector<Phase>& later) {
    const double share = budget_.share_s(phase, later);
    announce(std::string(name(phase)), phase_what(phase), share);
    const Window window(share);
    const std::size_t cuts_before = result_.budget ? result_.budget->cuts.size() : 0;
    switch (phase) {
      case Phase::health:
        health(share);
        break;
      case Phase::sweep:
        sweep(share);
        break;
      case Phase::ladder:
        ladder(share);
        break;
      case Phase::gpu_ladder:
        gpu_ladder(share);
        break;
      case Phase::pairs:
        pairs(share);
        break;
    }
    if (!lead_) return;
    if (result_.budget) {
      result_.budget->phases.push_back(PhaseSpend{phase, share, window.elapsed_s()});
      for (std::size_t i = cuts_before; i < result_.budget->cuts.size(); ++i) printers_.cut(result_.budget->cuts[i]);
    }
    save(config_, result_, started_, last_);
  }

  [[nodiscard]] OutlierThresholds thresholds() const {
    return OutlierThresholds{config_.pairs.outlier_mads, config_.pairs.outlier_drop};
  }

  // The second pass over rank 0's `suspects`: each with healthy partners
  // (never a node or link the run has already confirmed slow), apart from
  // the first pass's load (a rail's suspect on its rail alone), at `sizes`'
  // pair message sizes; every rank takes part. The judged suspects on rank 0.
  Confirmation confirm(const std::vector<Finding>& suspects, const RunConfig& sizes,
                       double seconds = unlimited_seconds) {
    std::vector<PairRound> rounds;
    if (lead_) rounds = confirmation_rounds(suspects, layout_.nodes, result_.findings);
    rounds = broadcast_rounds(world_, rounds, layout_.nodes);
    NodePairs second{PairMatrix(layout_.nodes), {}};
    std::uint64_t wrong = 0;
    if (!rounds.empty()) {
      Watchdog::note_phase("confirmation");
      // A latency suspect's small message in three bursts, each rail on
      // its own; bandwidth suspects need only the rounds.
      std::int32_t bursts = lead_ && std::any_of(suspects.begin(), suspects.end(),
                                                 [](const Finding& f) { return f.metric != FindingMetric::bandwidth; })
                                ? latency_confirmation_bursts
                                : 1;
      bursts = world_.broadcast_value(bursts, 0);
      // A link suspect's large message three times over, its bandwidth the
      // fastest: one pair is all that accuses it, where a node has two or
      // more partners.
      std::int32_t times =
          lead_ && std::any_of(suspects.begin(), suspects.end(),
                               [](const Finding& f) {
                                 return f.kind == FindingKind::slow_link && f.metric != FindingMetric::latency;
                               })
              ? link_confirmation_bursts
              : 1;
      times = world_.broadcast_value(times, 0);
      second = run_pair_checks(sizes, *transport_, world_, layout_, rounds, wrong, seconds, bursts, times);
    }
    if (!lead_) return {};
    result_.wrong_total += wrong;
    return confirm_suspects(suspects, second, layout_.hostnames, thresholds(), result_.findings);
  }

  [[nodiscard]] std::vector<Cut>* cuts() { return lead_ && result_.budget ? &result_.budget->cuts : nullptr; }

  // A ladder's limit: its share, where its cuts go, and what the sweep's
  // checks cost per byte (rank 0's), so a step whose check alone could not
  // fit is skipped before it starts.
  [[nodiscard]] PhaseLimit limit(double seconds) {
    PhaseLimit l{seconds, cuts(), {}};
    if (lead_) l.check_s_per_byte = check_seconds_per_byte(result_.records);
    return l;
  }

  // The pace rounds, within `seconds` (rank 0's): a first round, and a
  // second apart from it only when the first names a suspect, which it then
  // confirms or clears. What did not fit is a cut of `phase`. Returns the
  // time it took (rank 0's clock).
  double pace(double seconds, Phase phase) {
    Watchdog::note_phase("pace");
    const Window window(seconds);
    // On the MPI transport the work is the host's: where ranks share cores
    // the round would time the scheduler, so it does not run; on GPUs, where
    // ranks share a GPU (--allow-shared-gpu), it would time the sharing.
    std::string shared;
    if (transport_->name() != "mpi") {
      const std::string device = lead_ ? shared_device(result_.run.devices) : std::string();
      if (!device.empty())
        shared = fmt::format(
            "ranks share a GPU ({}): the pace round's work runs on it, so it would time the sharing; no rank is "
            "judged (one rank per GPU lets it run)",
            device);
    } else {
      const std::vector<SharedCores> machines = shared_cores(world_, layout_);
      if (lead_ && !machines.empty()) {
        const SharedCores& m = machines.front();
        std::vector<std::string> hosts;
        for (const int node : m.nodes) hosts.push_back(layout_.hostnames.at(static_cast<std::size_t>(node)));
        shared = fmt::format(
            "{} ranks share {} CPU cores of one machine ({}): on the MPI transport the pace round's work runs on "
            "those cores, so it would time their scheduler; no rank is judged (one rank per core, or GPUs, let it "
            "run)",
            m.ranks, m.cores, fmt::join(hosts, ", "));
      }
    }
    StragglersResult judged;
    if (world_.broadcast_value(shared.empty() ? 0 : 1, 0) != 0) {
      judged.shared = shared;
    } else {
      // The work sized once for both rounds, within a third of the share.
      const PaceWork work = size_pace_work(*transport_, world_, window.left_s());
      std::vector<PaceRound> rounds;
      rounds.push_back(run_pace_round(*transport_, world_, layout_, work, window.left_s() / 2));
      const int suspects = lead_ && !pace_suspects(rounds.front(), layout_.hostnames).empty() ? 1 : 0;
      if (world_.broadcast_value(suspects, 0) != 0)
        rounds.push_back(run_pace_round(*transport_, world_, layout_, work, window.left_s()));
      if (cuts() != nullptr)
        for (Cut& cut : pace_cuts(rounds, pace_iterations, phase)) cuts()->push_back(std::move(cut));
      if (lead_) judged = judge_stragglers(std::move(rounds), layout_.hostnames);
    }
    if (!lead_) return 0;
    printers_.stragglers(judged);
    result_.stragglers = std::move(judged);
    return window.elapsed_s();
  }

  // The pace rounds' part of a phase's share: 30%, at least 4 s where that
  // is no more than three quarters of the share, and at most 10 s. Two
  // rounds take well under a second on a healthy cluster, but a slow rank
  // makes each iteration as long as its work, and a slow rank is what they
  // are for. What they leave goes back to the phase.
  static double pace_share(double seconds) {
    return std::min(std::max(0.3 * seconds, std::min(4.0, 0.75 * seconds)), 10.0);
  }

  // The quick pass: the pace rounds, then one round of small and one of
  // medium messages over every node pair, a few iterations each, then the
  // findings at once.
  void health(double seconds) {
    seconds -= pace(pace_share(seconds), Phase::health);
    Watchdog::note_phase("health");
    RunConfig quick = config_;
    quick.pairs.bytes = health_bytes;
    quick.pairs.small_bytes = config_.pairs.small_bytes;
    quick.iterations.warmup = 1;
    quick.iterations.fixed_iters = health_iterations;
    // The second pass has a round's share of the pass, kept from its
    // rounds, and what they leave.
    const Window pass(seconds);
    PairsResult matrix = run_pairs(quick, *transport_, world_, layout_, PhaseLimit{seconds, cuts(), {}},
                                   PairPass{false, Phase::health, 1});
    // The suspects, then the second pass that confirms them (every rank).
    std::vector<Finding> suspects;
    if (lead_) suspects = find_suspects(NodePairs{matrix.nodes, matrix.rails}, matrix.hosts, thresholds());
    Confirmation confirmed = confirm(suspects, quick, std::isfinite(seconds) ? std::max(pass.left_s(), 0.0) : seconds);
    if (!lead_) return;
    result_.wrong_total += matrix.wrong;
    HealthResult health;
    health.bytes = matrix.bytes;
    health.small_bytes = matrix.small_bytes;
    health.findings = std::move(confirmed.findings);
    health.unconfirmed = std::move(confirmed.unconfirmed);
    health.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    printers_.health(health);
    // Shares are read on rank 0 only, so its budget alone is shortened.
    if (config_.on_finding == OnFinding::halve && budget_.limited() && !health.findings.empty() && result_.budget) {
      const double left = budget_.remaining_s();
      budget_.shorten(0.5);
      result_.budget->shortened_at_s = health.seconds;
      printers_.budget_halved(left);
    }
    result_.findings = health.findings;  // confirmed: the full matrix adds to them, never drops one
    result_.health = std::move(health);
  }

  void sweep(double seconds) {
    // One node with several ranks has no health pass: its pace rounds come first here.
    if (config_.command == Command::run && !wants_health() && world_.size() > 1)
      seconds -= pace(pace_share(seconds), Phase::sweep);
    Watchdog::note_phase("sweep");
    SweepListener listener;
    listener.on_progress = [this](const SweepRecord& r, std::size_t done, std::size_t total) {
      printers_.progress(r, done, total);
    };
    if (lead_) printers_.context(config_, result_.run);
    const int nics =
        wire_nics_per_node(result_.topology, layout_.ranks_per_node.empty() ? 1 : layout_.ranks_per_node.front());
    listener.on_point = [this, nics](std::span<const SweepRecord> measured) {
      const std::vector<SweepRecord> records = with_nic_wire(measured, layout_.nodes, nics);
      for (const SweepRecord& r : records) {
        result_.records.push_back(r);
        if (r.timing && r.timing->wrong) result_.wrong_total += *r.timing->wrong;
      }
      // Kept for the last words after every point, between its timed
      // batches and the next point's, and before it is printed: an
      // interrupted sweep's file holds every row it printed (the launcher's
      // notice saves what is kept, and nothing after it). Written at each
      // op's end (the phase's save writes the last): writing after every
      // point kept a write in flight nearly always when the launcher ends
      // the job, and its temporary could outlive the launcher's SIGKILL.
      const auto print = [&] { printers_.point(records); };
      if (!records.empty() && last_op_ && *last_op_ != records.front().op) {
        save(config_, result_, started_, last_, print);
      } else {
        remember(config_, result_, started_, last_);
        print();
      }
      if (!records.empty()) last_op_ = records.front().op;
    };
    listener.on_retaken = [this, nics](std::span<const SweepRecord> point) {
      for (const SweepRecord& r : with_nic_wire(point, layout_.nodes, nics)) {
        if (!keep_retaken(result_.records, r)) continue;
        if (r.timing && r.timing->wrong) result_.wrong_total += *r.timing->wrong;
        remember(config_, result_, started_, last_);
        printers_.retaken(r);
      }
    };
    SweepCost cost;
    run_sweep(config_, *transport_, world_, listener, seconds, cuts(), &cost);
    if (lead_ && cost.points > 0) result_.sweep_cost = cost;
  }

  void ladder(double seconds) {
    Watchdog::note_phase("ladder");
    // The NIC-bound ceiling needs the line rate: given, or from the topology
    // rank 0 gathered (every rank gets it, though only rank 0 analyses).
    RunConfig ladder_config = config_;
    if (!ladder_config.scale.nic_gbit_per_node) {
      std::optional<double> known;
      if (lead_ && result_.topology) known = network_gbit_per_node(*result_.topology);
      const double rate = world_.broadcast_value(known.value_or(0.0), 0);
      if (rate > 0) ladder_config.scale.nic_gbit_per_node = rate;
    }
    ScaleResult scaling = run_ladder(ladder_config, *transport_, world_, layout_, limit(seconds));
    if (!lead_) return;
    judge_ladder(scaling);
    for (const LevelResult& l : scaling.levels)
      for (const GroupResult& g : l.groups) result_.wrong_total += g.wrong;
    printers_.ladder(scaling);
    result_.scaling = std::move(scaling);
  }

  // What NCCL's log says it used, read on every rank and gathered to rank 0
  // (nothing on a transport whose library logs no connections).
  void nccl_usage() {
    const std::optional<ConnectionLog> log = transport_->connection_log();
    if (!log) return;  // the same transport on every rank: all or none
    Watchdog::note_phase("nccl usage");
    const NcclRankUsage mine = read_nccl_log(
        log->text, world_.rank(), std::string(),
        [this](int r) {
          return r >= 0 && static_cast<std::size_t>(r) < layout_.node_of_rank.size()
                     ? layout_.node_of_rank[static_cast<std::size_t>(r)]
                     : -1;
        },
        log->device);
    const std::string note = log->note.empty() ? std::string() : fmt::format("rank {}: {}", world_.rank(), log->note);
    // NCCL's lines may hold bytes that are not UTF-8 (a host name): replaced
    // in transit; the host itself comes from the layout on rank 0.
    const std::vector<std::string> all = world_.allgather(
        fields::to_value(mine).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n' + note);
    if (!lead_) return;
    NcclUsage usage;
    for (const std::string& entry : all) {
      const std::size_t cut = entry.find('\n');
      NcclRankUsage rank = fields::read<NcclRankUsage>(nlohmann::json::parse(entry.substr(0, cut)), "nccl.ranks");
      rank.host =
          layout_.hostnames[static_cast<std::size_t>(layout_.node_of_rank[static_cast<std::size_t>(rank.rank)])];
      usage.ranks.push_back(std::move(rank));
      if (cut + 1 < entry.size()) usage.notes.push_back(entry.substr(cut + 1));
    }
    printers_.nccl_usage(usage);
    result_.nccl = std::move(usage);
    save(config_, result_, started_, last_);
  }

  // After the pair matrix: the pipeline's stage links come from it.
  void model_parallel() {
    Watchdog::note_phase("model-parallel projection");
    announce("model-parallel projection",
             fmt::format("tp {} x pp {}: the TP all-reduce and the PP stage links", config_.model.tp, config_.model.pp),
             unlimited_seconds);
    const PairsResult* pairs = lead_ && result_.pairs ? &*result_.pairs : nullptr;
    ModelParallelResult mp = run_model_parallel(config_, *transport_, world_, layout_, pairs);
    if (!lead_) return;
    if (mp.tp_allreduce) result_.wrong_total += mp.tp_allreduce->wrong;
    printers_.model_parallel(mp);
    result_.model_parallel = std::move(mp);
    save(config_, result_, started_, last_);
  }

  // The sets come from each node's GPU link matrix: the run's topology, or
  // on `scale` (which records none) a probe without the copy timings.
  void gpu_ladder(double seconds) {
    Watchdog::note_phase("gpu ladder");
    std::vector<LinkMatrix> matrices;
    if (config_.command == Command::scale) {
      const ClusterTopology probed = gather_topology(world_, layout_, TopologyOptions{probe_roots("", ""), false});
      for (const NodeTopology& n : probed.nodes) matrices.push_back(n.gpu_matrix);
    } else if (lead_ && result_.topology) {
      for (const NodeTopology& n : result_.topology->nodes) matrices.push_back(n.gpu_matrix);
    }
    GpuLadderResult ladder = run_gpu_ladder(config_, *transport_, world_, layout_, matrices, limit(seconds));
    if (!lead_) return;
    judge_gpu_ladder(ladder, config_.scale.steps, config_.report.price_per_gpu_hour, config_.scale.server_prices);
    for (const GpuLevelResult& l : ladder.levels)
      for (const GpuSetResult& s : l.sets) result_.wrong_total += s.wrong;
    printers_.gpu_ladder(ladder);
    result_.gpu_ladder = std::move(ladder);
  }

  // The result is saved after every size, so an interrupted sweep's file
  // holds the sizes that finished. Its table goes out as the ladder's and the
  // matrix's do, a row per size as it completes.
  void p2p_sweep() {
    Watchdog::note_phase("p2p sweep");
    if (lead_) {
      P2PSweepResult& shape = result_.p2p_sweep.emplace();
      shape.ranks = p2p_sweep_ranks(config_.p2p_sweep, layout_);
      for (const int r : shape.ranks)
        shape.hosts.push_back(
            layout_.hostnames[static_cast<std::size_t>(layout_.node_of_rank[static_cast<std::size_t>(r)])]);
      shape.window = std::max(config_.p2p_sweep.window, 1);
      printers_.p2p_header(shape, config_.p2p_sweep.tests);
    }
    P2PSweepResult sweep =
        run_p2p_sweep(config_, *transport_, world_, layout_, [this](std::span<const P2PRecord> records) {
          P2PSweepResult& so_far = *result_.p2p_sweep;
          so_far.records.insert(so_far.records.end(), records.begin(), records.end());
          if (!records.empty() && records.front().wrong) so_far.wrong += *records.front().wrong;
          // Kept before it is printed, as the sweep's rows.
          save(config_, result_, started_, last_, [&] { printers_.p2p_row(records); });
        });
    if (!lead_) return;
    result_.wrong_total += sweep.wrong;
    result_.p2p_sweep = std::move(sweep);
    save(config_, result_, started_, last_);
  }

  void pairs(double seconds) {
    Watchdog::note_phase("pairs");
    // The second pass has a round's share of the phase, kept from the
    // matrix's rounds, and what they leave.
    const Window phase(seconds);
    PairsResult matrix = run_pairs(config_, *transport_, world_, layout_, PhaseLimit{seconds, cuts(), {}},
                                   PairPass{true, Phase::pairs, 1});
    // What the matrix suspects that the health pass did not confirm, then
    // the second pass over those.
    std::vector<Finding> suspects;
    if (lead_)
      suspects = new_suspects(find_suspects(NodePairs{matrix.nodes, matrix.rails}, matrix.hosts, thresholds()),
                              result_.findings);
    Confirmation confirmed =
        confirm(suspects, config_, std::isfinite(seconds) ? std::max(phase.left_s(), 0.0) : seconds);
    if (!lead_) return;
    result_.wrong_total += matrix.wrong;
    for (Finding& f : new_suspects(confirmed.findings, result_.findings)) result_.findings.push_back(std::move(f));
    result_.unconfirmed = std::move(confirmed.unconfirmed);
    std::vector<Finding> shown = result_.findings;
    shown.insert(shown.end(), result_.unconfirmed.begin(), result_.unconfirmed.end());
    printers_.pairs(matrix, shown);
    if (multi_node()) {
      result_.islands = find_latency_islands(matrix.nodes, matrix.hosts, config_.placement.island_ratio);
      printers_.islands(*result_.islands);
    }
    result_.pairs = std::move(matrix);
  }

  void bisection() {
    Watchdog::note_phase("bisection");
    announce("bisection",
             fmt::format("{} halvings of the {} nodes, each half sending to the other",
                         config_.placement.bisection_halvings, layout_.nodes),
             unlimited_seconds);
    // Rank 0's latency islands, on every rank: the cut between them comes
    // first; where latency shows none, a confirmed slow uplink's sides (an
    // unconfirmed one is no cut the fabric suggests: one slow pair and one
    // noisy one made it).
    std::vector<int> island_of(static_cast<std::size_t>(layout_.nodes), 0);
    if (lead_ && result_.islands)
      for (std::size_t k = 0; k < result_.islands->islands.size(); ++k)
        for (const int node : result_.islands->islands[k].nodes)
          if (node >= 0 && node < layout_.nodes) island_of[static_cast<std::size_t>(node)] = static_cast<int>(k);
    if (lead_ && (!result_.islands || result_.islands->islands.size() < 2)) {
      for (const Finding& f : result_.findings)
        if (f.kind == FindingKind::slow_uplink) {
          for (const int node : f.nodes)
            if (node >= 0 && node < layout_.nodes) island_of[static_cast<std::size_t>(node)] = 1;
          break;
        }
    }
    world_.broadcast(std::as_writable_bytes(std::span<int>(island_of)), 0);
    BisectionResult b = run_bisection(config_, *transport_, world_, layout_, island_of);
    if (!lead_) return;
    analyze_bisection(b, config_.placement.oversubscription_limit);
    result_.wrong_total += b.wrong;
    printers_.bisection(b);
    result_.bisection = std::move(b);
    save(config_, result_, started_, last_);
  }

  void storage() {
    Watchdog::note_phase("storage");
    announce("storage", fmt::format("shared storage at {}, from every node at once", config_.storage.path),
             unlimited_seconds);
    // The storage test waits on MPI barriers and the file system, not on the
    // transport: it gets the deadline whatever the transport.
    const bool rearmed = watchdog_ != nullptr && transport_->name() != "mpi";
    if (rearmed) watchdog_->rearm_deadline();
    // Cut short with files left, the lead's last words save what names them.
    const StorageEnded keep_for_last_words = [this](const StorageResult& cut) {
      const std::lock_guard lock(last_.mutex);
      last_.result.storage = cut;
    };
    StorageResult s = run_storage(config_, world_, layout_, lead_ ? keep_for_last_words : StorageEnded());
    if (rearmed) watchdog_->disarm_deadline();
    if (!lead_) return;
    analyze_storage(s);
    result_.wrong_total += s.wrong_blocks;
    printers_.storage(s);
    result_.storage = std::move(s);
    save(config_, result_, started_, last_);
  }

  // Rank 0: the complete result on disk.
  void finish() {
    result_.complete = true;
    save(config_, result_, started_, last_);
    if (watchdog_ != nullptr) watchdog_->set_last_words({});  // complete: nothing to take back
  }

  // Rank 0: the run judged as `report` judges a file (health, references,
  // gates, cost), printed by the table's closing lines and the summary; the
  // exit code from the verdicts asked for (--expect, --expect-reference,
  // --fail-on-warn), then the data check, which wins.
  int judge() {
    const ReportConfig& rc = config_.report;
    std::vector<ReportRun> runs;
    runs.push_back(
        {config_.json_path.empty() ? std::string("this run") : config_.json_path, result_, {}, Level::ok, {}});
    const Report report = build_report(std::move(runs), rc, expectations_with(rc.expectations_text));
    printers_.finalize(report);
    const bool asked = !rc.expects.empty() || rc.expect_reference || rc.fail_on_warn;
    const int judged = asked ? report.exit_code : exit_ok;
    if (!data_ok(result_)) return exit_failed;
    return below_min_bw() ? exit_failed : judged;
  }

  // NCCL_TESTS_MIN_BW as nccl-tests judges it: FAILED when the mean busbw is
  // below 90% of it; here per op, as the per-op `# Avg bus bandwidth` lines.
  [[nodiscard]] bool below_min_bw() const {
    if (!config_.min_bw_gbs) return false;
    bool below = false;
    for (const auto& [op, mean] : busbw_means_by_op(result_.records)) {
      if (mean >= *config_.min_bw_gbs * 0.9) continue;
      below = true;
      std::cerr << fmt::format(
          "fabricbench: FAILED: {} avg bus bandwidth {:g} GB/s is below 90% of NCCL_TESTS_MIN_BW={:g}\n", name(op),
          mean, *config_.min_bw_gbs);
    }
    return below;
  }

  std::optional<Op> last_op_;  // the sweep's op of the last point kept

  // `run` only: the phase's line on stderr (PhasePrinter) as it starts.
  void announce(const std::string& phase, const std::string& what, double share_s) {
    if (!lead_ || config_.command != Command::run) return;
    PhaseNotice notice;
    notice.index = ++phases_done_;
    notice.total = std::max(phases_total_, notice.index);
    notice.name = phase;
    notice.what = what;
    notice.share_s = share_s;
    notice.budget_s = config_.budget_s;
    notice.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    printers_.phase(notice);
  }

  // What a budgeted phase measures, in a few words.
  [[nodiscard]] std::string phase_what(Phase phase) const {
    const int nodes = layout_.nodes;
    const auto ops = [](const std::vector<Op>& list) {
      std::vector<std::string_view> names;
      for (const Op op : list) names.push_back(name(op));
      return fmt::format("{}", fmt::join(names, ", "));
    };
    switch (phase) {
      case Phase::health:
        return fmt::format("a quick pass over the {} node pairs at {}", nodes * (nodes - 1) / 2,
                           format_size(health_bytes));
      case Phase::sweep:
        if (config_.sizes.empty()) return ops(config_.ops);
        if (config_.sizes.size() == 1) return fmt::format("{} at {}", ops(config_.ops), format_size(config_.sizes[0]));
        return fmt::format("{} at {} sizes from {} to {}", ops(config_.ops), config_.sizes.size(),
                           format_size(config_.sizes.front()), format_size(config_.sizes.back()));
      case Phase::ladder:
        return fmt::format("{} at {} on 1 to {} nodes", ops(config_.scale.ops), format_size(config_.scale.bytes),
                           nodes);
      case Phase::gpu_ladder:
        return fmt::format("2 to {} ranks inside each node", layout_.ranks_per_node.front());
      case Phase::pairs:
        return nodes > 1 ? fmt::format("the node-pair matrix: {} pairs at {} and {}", nodes * (nodes - 1) / 2,
                                       format_size(config_.pairs.bytes), format_size(config_.pairs.small_bytes))
                         : fmt::format("the rank pairs inside the node at {}", format_size(config_.pairs.bytes));
    }
    return {};
  }

  int phases_total_ = 0;
  int phases_done_ = 0;
  const RunConfig& config_;
  const Comm& world_;
  Watchdog* watchdog_;
  LastSaved last_;
  const bool lead_ = world_.rank() == 0;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  Budget budget_{config_.budget_s, started_};  // shortened on rank 0 only (--on-finding halve)
  Layout layout_;
  std::unique_ptr<Transport> transport_;
  RunResult result_;
  Printer& printers_;
};

// The lead rank's terminal, in the order each step reaches it: the progress
// line's erase before a point's row; the sections (full, or what --quiet
// keeps); the closing summary; then a failed data check on stderr. The
// sections and the summary go through terminal_safe: they quote host names,
// strings probed on every node, verdict reasons and file names.
void add_terminal_printers(const RunConfig& config, PrinterMultiplex& printers) {
  if (progress_wanted(config)) printers.add(std::make_unique<ProgressPrinter>(std::cerr));
  // run's phases, a line each on stderr whatever it is (a launcher's pipe
  // too): unless -q, or --progress off.
  if (config.command == Command::run &&
      (config.progress == ProgressChoice::on || (config.progress == ProgressChoice::automatic && !config.quiet)))
    printers.add(std::make_unique<PhasePrinter>(std::cerr));
  // --format nccl-tests: stdout holds nccl-tests' lines alone; what else a
  // run says (findings, the summary of the files) goes to stderr, one line each.
  const bool nccl_tests = config.format == OutputFormat::nccl_tests;
  if (nccl_tests)
    printers.add(make_terminal_safe_printer(
        std::cout, [](std::ostream& o) -> std::unique_ptr<Printer> { return std::make_unique<NcclTestsPrinter>(o); }));
  std::ostream& rest = nccl_tests ? std::cerr : std::cout;
  printers.add(make_terminal_safe_printer(rest, [&config, nccl_tests](std::ostream& o) -> std::unique_ptr<Printer> {
    if (config.quiet || nccl_tests) return std::make_unique<QuietPrinter>(o);
    return std::make_unique<TerminalPrinter>(o);
  }));
  if (config.command != Command::topo)
    printers.add(make_terminal_safe_printer(rest, [&config](std::ostream& o) {
      return std::make_unique<RunSummaryPrinter>(o, RunSummaryFiles{config.json_path, config.csv_path});
    }));
  printers.add(std::make_unique<DataCheckPrinter>(std::cerr));
}

int execute(const RunConfig& config, const Comm& world, Watchdog* watchdog = nullptr) {
  PrinterMultiplex printers;  // none on the other ranks: only the lead keeps the result
  if (world.rank() == 0) add_terminal_printers(config, printers);
  return RunPipeline(config, world, watchdog, printers).run();
}

}  // namespace

int launcher_rank() {
  for (const char* key : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(key)) return std::atoi(value);
  }
  return 0;
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
    if (launcher_rank() != 0 || std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr)  // NOLINT(concurrency-mt-unsafe)
      throw UsageError(
          fmt::format("{} is for processes started without a launcher; under mpirun or srun run one "
                      "rank per GPU",
                      config.gpu.gpus > 0 ? "--gpus" : "FABRICBENCH_BOOTSTRAP"));
    return run_local_group(config, [&config](const Comm& comm) { return execute(config, comm); });
  }
  // MPI calls wait without a deadline: the watchdog gives them one, and ends
  // the run on SIGINT and SIGTERM with the files saved. It starts before MPI
  // does: MPI's own start-up waits on every rank too, and a rank stopped
  // there would otherwise hang the job (the launcher's rank is MPI's). It
  // ends before MPI_Finalize, as the run does: once a rank has exited with
  // its code, the launcher's SIGTERM to the others is no interruption.
  const int rank = launcher_rank();
  std::optional<Watchdog> watchdog;
  watchdog.emplace(std::chrono::milliseconds(static_cast<std::int64_t>(config.gpu.timeout_s * 1000.0)), this_hostname(),
                   rank, rank == 0, exit_error, exit_interrupted);
  Watchdog::note_phase("MPI start-up");
  const MpiSession session(argc, argv);
  const Comm world = Comm::world();
  Watchdog::note_phase("start-up");
  const int code = run_guarded(
      [&] {
        // Each rank's reason reaches the lead before the rank ends
        // (core/signal_relay.hpp): the lead's address, port and token first.
        if (world.size() > 1) {
          std::unique_ptr<SignalRelay> relay = world.rank() == 0 ? SignalRelay::listen() : nullptr;
          const std::string lead = world.broadcast_bytes(relay ? relay->text() : std::string(), 0);
          if (world.rank() != 0) relay = SignalRelay::toward(lead);
          if (relay) watchdog->set_relay(std::move(relay));
        }
        return execute(config, world, &*watchdog);
      },
      Guard{world.rank() == 0, fmt::format("{} rank {}", this_hostname(), world.rank()), [&world](const std::string&) {
              if (world.size() > 1) world.abort(exit_error);
            }});
  watchdog.reset();
  return code;
}

}  // namespace fabricbench
