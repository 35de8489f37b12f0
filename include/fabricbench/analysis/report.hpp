#pragma once
// Reports: result files turned into decisions. One file gives its tables
// again, its verdicts and its cost; several files are grouped by their run
// label (`run --label`; a file without one is a group of its own), each
// group's runs aggregated into a mean and a spread, and the groups compared
// side by side: a point's ratio only where both sides are above noise
// (compare_ratio), and a one-line result per group (Report::headline).
// Building the report is pure logic over records; the writers only format.

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/analysis/verdict.hpp"
#include "fabricbench/core/config.hpp"
#include "fabricbench/core/stats.hpp"
#include "fabricbench/results/result.hpp"

namespace fabricbench {

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

  // From the model-parallel projection (--tp, --pp), when there is one.
  std::optional<CostPoint> model_parallel;
};
// nullopt when no price is known.
std::optional<CostSummary> cost_of(const RunResult& result, const PriceInfo& override_price);

// "GPUs" when the run drove GPUs (nccl), "ranks" on the host transport, so a
// CPU-only run never speaks of GPUs.
std::string unit_word(const RunResult& result);

struct ReportRun {
  std::string path;
  RunResult result;
  std::vector<Verdict> verdicts;  // health, references, gates
  Level level = Level::ok;        // worst gating verdict (see Report::gating)
  std::optional<CostSummary> cost;
};

struct ReportGroup {
  std::string label;              // "A", "B", ...
  std::string name;               // the runs' --label, else the file's name
  std::string cluster;            // "2 nodes (node-a, node-b), 4 ranks, mpi" (of its first run)
  std::vector<std::size_t> runs;  // indices into Report::runs
};

// The group a run belongs to: its --label, or, without one, its file (each
// unlabelled file is a group of its own: two files are the same setup only
// when the person who ran them said so).
std::string group_key(const std::string& path, const RunResult& result);

// Why a compared point has no ratio.
enum class Noise {
  none,           // both sides above noise: the ratio stands
  missing,        // one side did not measure the point
  below_floor,    // a side's busbw is below noise_floor_fraction of that op's peak in the comparison
  within_spread,  // the difference is inside the groups' own run-to-run spread
};
std::string_view name(Noise noise);

// A point's busbw below this fraction of the highest busbw of its op in the
// comparison (any group, size, dtype, placement) is latency-bound: its ratio
// says nothing about bandwidth (0.001 GB/s against 0.0002 GB/s is "5x" of
// nothing), so none is given.
inline constexpr double noise_floor_fraction = 0.01;

struct CompareRatio {
  std::optional<double> value;  // other / base busbw, when noise is none
  Noise noise = Noise::missing;
};

// The ratio of `other` to `base` at one point: missing when either is
// absent; below_floor when either mean is under `floor_gbs`; within_spread
// when either group has several runs and the means differ by no more than
// twice the standard error of their difference, sqrt(sd_a²/n_a + sd_b²/n_b);
// else the ratio of the means.
CompareRatio compare_ratio(const std::optional<Spread>& base, const std::optional<Spread>& other, double floor_gbs);

// One compared point, keyed by op, dtype, redop, root, placement and size;
// one spread per group and each group's ratio to the first.
struct CompareRow {
  Op op = Op::allreduce;
  DType dtype = DType::float32;
  std::optional<RedOp> redop;
  std::optional<int> root;
  Placement placement = Placement::out_of_place;
  std::size_t bytes = 0;
  std::vector<std::optional<Spread>> busbw;  // by group
  std::vector<CompareRatio> ratio;           // by group, to group 0 (the first is to itself: none, 1)
};

// Messages from this size up are the "large" ones a headline sums up.
inline constexpr std::size_t headline_min_bytes = std::size_t{1} << 20;

// One group against the first, in a line: per op the geometric mean of the
// ratios at sizes >= headline_min_bytes (points within noise count as 1);
// then the link whose bandwidth differs most between the two groups' pair
// matrices (the same two hosts in both), and the slow nodes and links only
// one of them found.
struct OpDifference {
  Op op = Op::allreduce;
  double ratio = 1;  // geometric mean, other / base busbw
  int points = 0;    // sizes that entered it
  int noisy = 0;     // of which within noise (counted as 1)
};
struct LinkDifference {
  std::string from;
  std::string to;
  double base_gbs = 0;   // mean over the base group's runs
  double other_gbs = 0;  // mean over the other group's runs
};
struct GroupHeadline {
  std::size_t group = 0;  // against group 0
  std::vector<OpDifference> ops;
  std::optional<LinkDifference> link;  // when both have pair data on common hosts and a link differs by 10% or more
  std::vector<std::string> only_here;  // findings of this group's runs that group 0's do not hold
  std::vector<std::string> only_base;  // findings of group 0's runs that this group's do not hold
  std::string text;                    // "B (slow) vs A (healthy): allreduce busbw 41% lower at >= 1 MiB; ..."
};

struct LadderRow {
  Op op = Op::allreduce;
  std::string level;                              // "2 nodes", "rail"
  std::vector<std::optional<Spread>> busbw;       // median busbw, by group
  std::vector<std::optional<double>> efficiency;  // mean over the group's runs
};

// The charts, computed here so the printers only draw them.

// busbw of one group's runs at one placement: a spread over the runs per size.
struct ChartPoint {
  std::size_t bytes = 0;
  Spread busbw;
};
struct ChartSeries {
  std::string label;  // the group ("A: 2 nodes (...)"), or the cluster for one group
  std::size_t group = 0;
  Placement placement = Placement::out_of_place;
  std::vector<ChartPoint> points;  // by size, ascending
};
struct BusbwChart {
  Op op = Op::allreduce;
  std::vector<ChartSeries> series;  // by group, out-of-place before in-place
};

// One run's ladder: median busbw per level and op, as the run recorded it.
struct LadderBar {
  Op op = Op::allreduce;
  std::size_t level = 0;  // index into LadderChart::levels
  double busbw_median_gbs = 0;
  std::optional<double> efficiency;
};
struct LadderChart {
  std::size_t run = 0;  // index into Report::runs
  std::size_t bytes = 0;
  std::vector<std::string> levels;  // level_label order of first appearance
  std::vector<Op> ops;
  std::vector<LadderBar> bars;
};

// One measured link of a pair matrix.
struct MatrixCell {
  int from = 0;
  int to = 0;
  double value = 0;
  bool flagged = false;  // a finding touches it
};

// A pair matrix to draw as a heat-map: row sends to column. Only measured
// links are held, so the view grows with the links a file holds, not with
// the square of its host list.
struct MatrixChart {
  std::string id;       // "pairs-0", "pairs-0-latency", "pairs-0-node-1"
  std::string title;    // "Node-to-node bandwidth at 256 MiB"
  std::string caption;  // the run file and what the colours mean
  std::string unit;     // "GB/s" or "us"
  bool higher_is_better = true;
  int size = 0;
  std::vector<std::string> labels;  // host names (or "local 0", ...)
  std::vector<MatrixCell> cells;    // the measured links only, by row then column
  double median = 0;                // core::median over the measured cells
  double low = 0;                   // the lowest and highest measured value
  double high = 0;
};

struct TopologyRow {
  std::string what;                 // "GPUs per node"
  std::vector<std::string> values;  // by group ("-" when unknown)
  bool differs = false;
};

struct Report {
  std::vector<ReportRun> runs;
  std::vector<ReportGroup> groups;
  std::vector<CompareRow> compare;         // when several runs
  std::vector<GroupHeadline> headline;     // when several groups: each group after the first against it
  std::vector<LadderRow> ladder;           // when several runs and any has a ladder
  std::vector<TopologyRow> topology;       // when several groups and any has a topology
  std::vector<BusbwChart> busbw_charts;    // one per op with timings, ascending op
  std::vector<LadderChart> ladder_charts;  // one per run with a ladder
  std::vector<MatrixChart> matrix_charts;  // per run: node bandwidth, node latency, each node's local ranks
  Level level = Level::ok;                 // worst over the runs
  int exit_code = 0;
};

// One run judged: its verdicts (health, references, gates), worst first,
// and the worst gating level; what `report` shows for a file and what a
// run saves as its `verdicts`.
struct RunVerdicts {
  std::vector<Verdict> verdicts;
  Level level = Level::ok;
};
RunVerdicts judge_run(const RunResult& result, const ReportConfig& config, const Expectations& expectations);

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
