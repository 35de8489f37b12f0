#pragma once
// Reports: result files turned into decisions. One file gives its tables
// again, its verdicts and its cost; several files are grouped by cluster
// (the same hosts, ranks and transport), each group's runs aggregated into
// a mean and a spread, and the groups compared side by side with ratios.
// Building the report is pure logic over records; the writers only format.

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/analysis/verdict.hpp"
#include "fabricbench/core/config.hpp"
#include "fabricbench/model/result.hpp"

namespace fabricbench {

// Mean and spread of one figure over the runs of a group.
struct Spread {
  double mean = 0;
  double sd = 0;  // sample standard deviation; 0 for one run
  double min = 0;
  double max = 0;
  int runs = 0;
};
Spread spread_of(const std::vector<double>& values);  // values not empty

// What a run cost, at the price recorded in it or given to `report`.
struct CostPoint {
  int nodes = 0;
  int gpus = 0;
  double step_ms = 0;
  double per_1000_steps = 0;  // the cost of 1000 training steps at this node count
};
struct CostSummary {
  PriceInfo price;
  std::optional<double> run_cost;   // duration × (GPUs × GPU price, or nodes × node price)
  std::string why_no_run_cost;      // when run_cost is empty
  std::vector<CostPoint> training;  // from the scaling projection, when there is one
};
// nullopt when no price is known.
std::optional<CostSummary> cost_of(const RunResult& result, const PriceInfo& override_price);

struct ReportRun {
  std::string path;
  RunResult result;
  std::vector<Verdict> verdicts;  // health, references, gates
  Level level = Level::ok;        // worst gating verdict (see Report::gating)
  std::optional<CostSummary> cost;
};

struct ReportGroup {
  std::string label;              // "A", "B", ...
  std::string cluster;            // "2 nodes (node-a, node-b), 4 ranks, mpi"
  std::vector<std::size_t> runs;  // indices into Report::runs
};

// One compared point: op, dtype, placement and size; one spread per group.
struct CompareRow {
  Op op = Op::allreduce;
  DType dtype = DType::float32;
  Placement placement = Placement::out_of_place;
  std::size_t bytes = 0;
  std::vector<std::optional<Spread>> busbw;  // by group
};

struct LadderRow {
  Op op = Op::allreduce;
  std::string level;                              // "2 nodes", "rail"
  std::vector<std::optional<Spread>> busbw;       // median busbw, by group
  std::vector<std::optional<double>> efficiency;  // mean over the group's runs
};

struct TopologyRow {
  std::string what;                 // "GPUs per node"
  std::vector<std::string> values;  // by group ("-" when unknown)
  bool differs = false;
};

struct Report {
  std::vector<ReportRun> runs;
  std::vector<ReportGroup> groups;
  std::vector<CompareRow> compare;    // when several runs
  std::vector<LadderRow> ladder;      // when several runs and any has a ladder
  std::vector<TopologyRow> topology;  // when several groups and any has a topology
  Level level = Level::ok;            // worst over the runs
  int exit_code = 0;
};

// Judges each run (health, references, gates) and compares them. Gating:
// FAIL from the data check, a --expect gate, or (with expect_reference) a
// reference; WARN from the health verdicts and (with expect_reference) a
// reference. Throws UsageError for a bad gate expression.
Report build_report(std::vector<ReportRun> runs, const ReportConfig& config, const Expectations& expectations);

// "2 nodes (node-a, node-b), 4 ranks, mpi": the cluster a run ran on (three
// hostnames at most).
std::string cluster_text(const RunResult& result);

// The exit code for a level: FAIL 3, WARN 1 when fail_on_warn, else 0.
int exit_code_for(Level level, bool fail_on_warn);

}  // namespace fabricbench
