#pragma once
// Results are plain records: the sweep fills them, analysis reads them,
// writers only format them.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/core/budget.hpp"
#include "fabricbench/core/config.hpp"
#include "fabricbench/core/field_list.hpp"
#include "fabricbench/core/types.hpp"
#include "fabricbench/records/gpu_ladder.hpp"
#include "fabricbench/records/model_parallel.hpp"
#include "fabricbench/records/nccl_usage.hpp"
#include "fabricbench/records/p2p.hpp"
#include "fabricbench/records/pairs.hpp"
#include "fabricbench/records/placement.hpp"
#include "fabricbench/records/scaling.hpp"
#include "fabricbench/records/storage.hpp"
#include "fabricbench/records/stragglers.hpp"
#include "fabricbench/records/sweep.hpp"
#include "fabricbench/records/topology.hpp"
#include "fabricbench/records/verdict.hpp"

namespace fabricbench {

// What the tool is: written into every result file.
struct ToolInfo {
  std::string name = "fabricbench";
  std::string version;
  std::string git;
  std::vector<std::string> transports;           // compiled in
  std::map<std::string, std::string> libraries;  // name -> version (built against / at run time)
};

// The price of the machines, as the person running the tool gave it (any
// currency): what the reports turn into the cost of the run and of training.
// The currency of prices given without --currency.
inline constexpr std::string_view default_currency = "USD";

struct PriceInfo {
  std::optional<double> per_gpu_hour;  // per rank-hour: one rank drives one GPU
  std::optional<double> per_node_hour;
  std::string currency;  // ISO 4217 code (--currency); empty in files from before it
};

// Who ran where, and how.
struct RunInfo {
  std::string start_utc;  // ISO 8601, e.g. 2026-11-29T19:09:14Z
  std::string label;      // --label: names the run in CSV rows and comparisons; empty when not given
  std::vector<std::string> command_line;
  int ranks = 0;
  int nodes = 0;
  std::vector<int> ranks_per_node;     // by node index
  std::vector<std::string> hostnames;  // by node index
  std::vector<int> rank_nodes;         // each world rank's node index (empty in files from before it)
  std::string transport;
  std::map<std::string, std::string> environment;  // NCCL_*, UCX_*, OMPI_MCA_*, ...
  // nccl: one line per rank, "rank R: host GPU index name bus-id UUID (compute X.Y)".
  std::vector<std::string> devices;
  std::optional<PriceInfo> cost;  // when a price was given
  // How each record's time_us combines the ranks' times (--rank-time,
  // nccl-tests' -a); absent in files from before it existed (the mean).
  std::optional<RankTime> rank_time;
};

// The quick pass over node pairs before the sweep (`run` on several nodes):
// what it named and how soon, kept even when the budget cuts the full matrix.
struct HealthResult {
  std::size_t bytes = 0;             // the medium message
  std::size_t small_bytes = 0;       // the small one
  double seconds = 0;                // from the run's start to this verdict
  std::vector<Finding> findings;     // confirmed by the second pass
  std::vector<Finding> unconfirmed;  // suspects the second pass did not confirm
};

struct RunResult {
  ToolInfo tool;
  RunInfo run;
  std::vector<SweepRecord> records;
  std::optional<SweepCost> sweep_cost;         // where the sweep's time went, when a sweep ran
  std::optional<ScaleResult> scaling;          // the ladder, when it ran
  std::optional<GpuLadderResult> gpu_ladder;   // the GPU-count ladder inside each node, when it ran
  std::optional<PairsResult> pairs;            // the pair matrix, when it ran
  std::optional<P2PSweepResult> p2p_sweep;     // p2p --sweep: the OSU tests between two ranks
  std::vector<Finding> findings;               // slow nodes and links, each confirmed by a second pass
  std::vector<Finding> unconfirmed;            // suspects a second pass measured healthy (or could not measure)
  std::optional<StragglersResult> stragglers;  // the pace rounds: ranks or nodes that every collective waits for
  std::optional<ClusterTopology> topology;     // the topology probe, when it ran
  std::optional<HealthResult> health;          // the quick pass, when it ran
  std::optional<BudgetRecord> budget;          // with --budget: the shares and what was cut
  // Placement and storage (records/placement.hpp, records/storage.hpp).
  std::optional<IslandsResult> islands;      // latency islands, from the pair matrix
  std::optional<BisectionResult> bisection;  // the bisection test
  std::optional<StorageResult> storage;      // shared storage from every node at once
  bool complete = false;                     // false while the run is still going (or was interrupted)
  std::optional<double> duration_s;          // wall time from start to the last save
  std::uint64_t wrong_total = 0;
  bool checked = false;
  std::string end_reason;  // why an incomplete run ended (timeout, signal); empty otherwise

  // --tp / --pp: the model-parallel projection, when it ran.
  std::optional<ModelParallelResult> model_parallel;

  // What NCCL used on the world communicator, from its own log (NCCL runs only).
  std::optional<NcclUsage> nccl;
  // The run's verdicts as the lead judged them at the last save (health,
  // references, gates; analysis/report.hpp), so a spreadsheet or CI reads
  // them without `report`; `report` recomputes them from the rest.
  std::vector<Verdict> verdicts;
};

// Every wrong element the result holds: the status total, or the sum of the
// records', ladder groups' and pair matrix's counts when that is more (a file
// read back may disagree with itself; the larger count wins, saturating).
inline std::uint64_t wrong_elements(const RunResult& result) {
  std::uint64_t parts = 0;
  const auto add = [&parts](std::uint64_t n) { parts = n > UINT64_MAX - parts ? UINT64_MAX : parts + n; };
  for (const SweepRecord& r : result.records)
    if (r.timing && r.timing->wrong) add(*r.timing->wrong);
  if (result.scaling)
    for (const LevelResult& l : result.scaling->levels)
      for (const GroupResult& g : l.groups) add(g.wrong);
  if (result.gpu_ladder)
    for (const GpuLevelResult& l : result.gpu_ladder->levels)
      for (const GpuSetResult& s : l.sets) add(s.wrong);
  if (result.pairs) add(result.pairs->wrong);
  if (result.bisection) add(result.bisection->wrong);
  if (result.storage) add(result.storage->wrong_blocks);
  return std::max(parts, result.wrong_total);
}

// True when no element was found wrong. Unchecked data is not "ok": the JSON
// writes data_ok as null then, and reports say "not checked".
inline bool data_ok(const RunResult& result) { return wrong_elements(result) == 0; }

// The "status" object of a result file: members of the run result, and
// data_ok derived from all of it (null when nothing was checked).
template <class Result>
struct StatusOf {
  Result& result;
};

// ---- field lists (core/field_list.hpp) ------------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, StatusOf<RunResult>> ||
    std::same_as<std::remove_const_t<Self>, StatusOf<const RunResult>>
void fields_of(Self& s, Field&& field) {
  auto& r = s.result;
  field("complete", r.complete);
  field("checked", r.checked);
  field("wrong_elements", r.wrong_total);
  field("data_ok", fields::written(r.checked ? std::optional<bool>(data_ok(r)) : std::nullopt));
  field("duration_s", fields::omitted(r.duration_s));
  field("reason", fields::omitted(r.end_reason));
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, HealthResult>
void fields_of(Self& h, Field&& field) {
  field("bytes", h.bytes);
  field("small_bytes", h.small_bytes);
  field("seconds", h.seconds);
  field("findings", h.findings);
  field("unconfirmed", fields::omitted(h.unconfirmed));
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ToolInfo>
void fields_of(Self& t, Field&& field) {
  field("name", t.name);
  field("version", t.version);
  field("git", t.git);
  field("transports", t.transports);
  field("libraries", t.libraries);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, PriceInfo>
void fields_of(Self& p, Field&& field) {
  field("price_per_gpu_hour", fields::omitted(p.per_gpu_hour));
  field("price_per_node_hour", fields::omitted(p.per_node_hour));
  field("currency", fields::omitted(p.currency));
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, RunInfo>
void fields_of(Self& r, Field&& field) {
  field("start_utc", r.start_utc);
  field("label", fields::omitted(r.label));
  field("command_line", r.command_line);
  field("ranks", r.ranks);
  field("nodes", r.nodes);
  field("ranks_per_node", r.ranks_per_node);
  field("hostnames", r.hostnames);
  field("rank_nodes", fields::omitted(r.rank_nodes));
  field("transport", r.transport);
  field("environment", r.environment);
  field("devices", fields::omitted(r.devices));
  field("cost", fields::omitted(r.cost));
  field("rank_time", fields::omitted(r.rank_time));
}

}  // namespace fabricbench
