#pragma once
// The terminal sections: each prints one record (or the report) as text to an
// injected stream; the TerminalPrinter (output/printer.hpp) calls them as a
// run goes, `report` prints the same. "print" is terminal text; "write" is a
// file format (output/file_writers.hpp, results/result_json.hpp).

#include <iosfwd>
#include <optional>
#include <span>
#include <vector>

#include "fabricbench/analysis/report.hpp"
#include "fabricbench/analysis/verdict.hpp"
#include "fabricbench/results/result.hpp"

namespace fabricbench {

// The ladder, the pair matrix and the findings as tables
// (output/multinode_sections.cpp).
void print_ladder(const ScaleResult& scaling, std::ostream& out);
void print_pairs(const PairsResult& pairs, const std::vector<Finding>& findings, std::ostream& out);

// The GPU-count ladder inside each node, its projection and job costs.
void print_gpu_ladder(const GpuLadderResult& ladder, std::ostream& out);

// The model-parallel projection (--tp, --pp).
void print_model_parallel(const ModelParallelResult& mp, std::ostream& out);

// Latency islands, the bisection test and the storage test
// (output/placement_sections.cpp).
void print_islands(const IslandsResult& r, std::ostream& out);
// What NCCL used (records/nccl_usage.hpp): versions, network and NICs,
// GPUDirect RDMA, the transports within and across nodes, channels, NVLS,
// the settings NCCL took from the environment; the lines, for the HTML too.
std::vector<std::string> nccl_usage_lines(const NcclUsage& usage);
void print_nccl_usage(const NcclUsage& usage, std::ostream& out);
void print_bisection(const BisectionResult& b, std::ostream& out);
void print_storage(const StorageResult& s, std::ostream& out);

// `p2p --sweep` in the sweep table's style: one row per size, a column per
// OSU test (latency in us, bw and bibw in GB/s), the wrong bytes of the
// size's checked exchange last. The header: who runs, the window, the
// column titles for `tests`; a row: one size's records in that order.
void print_p2p_sweep_header(const P2PSweepResult& sweep, std::span<const P2PTest> tests, std::ostream& out);
void print_p2p_sweep_row(std::span<const P2PRecord> records, std::ostream& out);

// The report: per run the tables, verdicts and cost; then the comparison
// when there are several runs.
void print_report(const Report& report, std::ostream& out);

// The budget: its seconds, the run's wall time, each phase's share and use,
// and every cut with its reason.
void print_budget(const BudgetRecord& budget, std::optional<double> duration_s, std::ostream& out);

// The quick health pass's findings and how soon they came.
void print_health(const HealthResult& health, std::ostream& out);
// The pace rounds: what they found, a line each, or that every rank kept pace.
void print_stragglers(const StragglersResult& stragglers, std::ostream& out);

// The verdicts alone (what `run --expect` prints after its tables).
// The price a cost is reckoned at ("USD 2.5 per GPU-hour") and the run's
// own cost ("USD 0.08 (36.0 s on 4 ranks, 2 nodes)", or why it is unknown).
std::string price_text(const CostSummary& cost, const RunResult& result);
std::string run_cost_text(const CostSummary& cost, const RunResult& result);

// "# Verdict: LEVEL", the headline (analysis/headline.hpp), then every
// verdict worst first with its cause, fix and source.
void print_decision(const ReportRun& run, std::ostream& out);

// The sweep's table is a printer: TablePrinter in output/printer.hpp.

}  // namespace fabricbench
