#pragma once
// Printers only format. Each writes to an injected stream, step by step, as
// google/benchmark's reporters and nvbench's printers do: a measuring run
// hands every printer each phase's records as the phase ends (the header,
// the topology, the sweep's context and points, the ladders, the pairs, ...),
// and the judged report at the end. Several printers run at once through a
// PrinterMultiplex, so a measuring run and `report` feed the same set, and a
// run prints nothing but through its printers.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fabricbench/analysis/report.hpp"
#include "fabricbench/core/config.hpp"
#include "fabricbench/results/result.hpp"

namespace fabricbench {

// A phase of `run` as it starts: which of how many, what it measures, and
// how long it may take: its share of the budget (infinite without one).
struct PhaseNotice {
  int index = 1;  // from 1
  int total = 1;
  std::string name;  // "sweep", "pairs", ...
  std::string what;  // "3 ops x 11 sizes x 2 placements"
  double share_s = 0;
  std::optional<double> budget_s;  // the run's --budget
  double elapsed_s = 0;            // since the run started
};

class Printer {
 public:
  Printer() = default;
  virtual ~Printer() = default;
  Printer(const Printer&) = delete;
  Printer& operator=(const Printer&) = delete;
  Printer(Printer&&) = delete;
  Printer& operator=(Printer&&) = delete;

  // A measuring run's steps, in the order its phases run, each with the
  // records its phase produced; every step has an empty default, so a
  // printer takes only the ones it shows.

  // Once, first: the tool and where the run runs.
  virtual void header(const ToolInfo& /*tool*/, const RunInfo& /*run*/) {}
  // As each phase of `run` starts.
  virtual void phase(const PhaseNotice& /*notice*/) {}
  virtual void topology(const ClusterTopology& /*topology*/) {}
  // The quick pass over node pairs, as soon as it has named what it found.
  virtual void health(const HealthResult& /*health*/) {}
  // The pace rounds: the ranks or nodes every collective waits for.
  virtual void stragglers(const StragglersResult& /*stragglers*/) {}
  // --on-finding halve: the health pass named a host, so the rest of the run
  // keeps half of the `left_s` seconds it had.
  virtual void budget_halved(double /*left_s*/) {}
  // What the budget took from a phase, as the phase ends.
  virtual void cut(const Cut& /*cut*/) {}

  // The sweep. Once, before the first point: the settings of the run.
  virtual void context(const RunConfig& /*config*/, const RunInfo& /*run*/) {}
  // Before each point: the point about to run (its first placement), the
  // points done and their total.
  virtual void progress(const SweepRecord& /*next*/, std::size_t /*done*/, std::size_t /*total*/) {}
  // The placements of one point (op, dtype, redop, size), as it completes.
  virtual void point(std::span<const SweepRecord> /*placements*/) {}
  // After the points: a measurement the budget cut, measured again with the
  // time the sweep had left (its first_iterations say what the first had).
  virtual void retaken(const SweepRecord& /*again*/) {}

  // The ladders, each once it has run.
  virtual void ladder(const ScaleResult& /*scaling*/) {}
  virtual void gpu_ladder(const GpuLadderResult& /*ladder*/) {}

  // p2p --sweep: who runs and the tests, then each size as it completes.
  virtual void p2p_header(const P2PSweepResult& /*shape*/, std::span<const P2PTest> /*tests*/) {}
  virtual void p2p_row(std::span<const P2PRecord> /*records*/) {}

  // The pair matrix with the findings that stand (the health pass's when a
  // cut-short matrix cannot replace them), then its latency islands.
  virtual void pairs(const PairsResult& /*pairs*/, const std::vector<Finding>& /*findings*/) {}
  virtual void islands(const IslandsResult& /*islands*/) {}
  // What NCCL used on the world communicator, from its own log.
  virtual void nccl_usage(const NcclUsage& /*usage*/) {}
  // The model-parallel projection (--tp, --pp).
  virtual void model_parallel(const ModelParallelResult& /*projection*/) {}
  virtual void bisection(const BisectionResult& /*bisection*/) {}
  virtual void storage(const StorageResult& /*storage*/) {}
  // After the last phase: the budget's shares and cuts, with the run's wall time.
  virtual void budget(const BudgetRecord& /*budget*/, std::optional<double> /*duration_s*/) {}

  // Once, at the end: the report built from the result(s).
  virtual void finalize(const Report& /*report*/) {}
};

// Hands every step to each of its printers, in the order they were added.
class PrinterMultiplex final : public Printer {
 public:
  void add(std::unique_ptr<Printer> printer);
  [[nodiscard]] std::size_t size() const { return printers_.size(); }
  void header(const ToolInfo& tool, const RunInfo& run) override;
  void phase(const PhaseNotice& notice) override;
  void topology(const ClusterTopology& topology) override;
  void health(const HealthResult& health) override;
  void stragglers(const StragglersResult& stragglers) override;
  void budget_halved(double left_s) override;
  void cut(const Cut& cut) override;
  void context(const RunConfig& config, const RunInfo& run) override;
  void progress(const SweepRecord& next, std::size_t done, std::size_t total) override;
  void point(std::span<const SweepRecord> placements) override;
  void retaken(const SweepRecord& again) override;
  void ladder(const ScaleResult& scaling) override;
  void gpu_ladder(const GpuLadderResult& ladder) override;
  void p2p_header(const P2PSweepResult& shape, std::span<const P2PTest> tests) override;
  void p2p_row(std::span<const P2PRecord> records) override;
  void pairs(const PairsResult& pairs, const std::vector<Finding>& findings) override;
  void islands(const IslandsResult& islands) override;
  void nccl_usage(const NcclUsage& usage) override;
  void model_parallel(const ModelParallelResult& projection) override;
  void bisection(const BisectionResult& bisection) override;
  void storage(const StorageResult& storage) override;
  void budget(const BudgetRecord& budget, std::optional<double> duration_s) override;
  void finalize(const Report& report) override;

 private:
  std::vector<std::unique_ptr<Printer>> printers_;
};

// The terminal table in nccl-tests' column order: a settings header, then
// per point size count type redop root | time algbw busbw #wrong (out of
// place) | the same in place, then p50 p99 iterations of each; at the end
// the per-op averages, the data check and nccl-tests' `# Avg bus bandwidth`.
// The `#` line saying a measurement the budget cut was measured again with
// the time the sweep had left, with its new figures and the first's
// iterations (the table's row above it holds the first's).
std::string retaken_line(const SweepRecord& again);

class TablePrinter final : public Printer {
 public:
  explicit TablePrinter(std::ostream& out) : out_(&out) {}
  void context(const RunConfig& config, const RunInfo& run) override;
  void point(std::span<const SweepRecord> placements) override;
  void retaken(const SweepRecord& again) override;
  // Prints the closing lines of the first run.
  void finalize(const Report& report) override;
  // The closing lines of one result (the report text calls it per run).
  void summary(const RunResult& result);
  // The optional columns of a saved result, from what its records hold (the
  // report text, which calls no context()).
  void columns_for(const RunResult& result);

 private:
  std::ostream* out_;
  std::string current_header_;
  bool second_batch_seen_ = false;
  // Set by context(): NCCL's algorithm column (not on the MPI transport, whose
  // library does not say), the NIC wire rate column (more than one node).
  bool algorithm_column_ = false;
  bool wire_column_ = false;
};

// `--format nccl-tests`: the sweep exactly as nccl-tests prints it, for the
// parsers written against it. Its header lines (with the fields fabricbench
// holds, none invented), then per op its column header, one row per size of
// 13 columns (size count type redop root, then time algbw busbw #wrong out
// of place and in place) with nccl-tests' widths, `-1` for no root and
// `N/A` for an unchecked #wrong, and after the op's rows its own footer:
// `# Out of bounds values`, `# Avg bus bandwidth` (the mean busbw of that
// op's rows, both placements, as nccl-tests averages). nccl-tests runs one op
// per binary; one footer per op keeps a grep per op right. A skipped point
// has no row: a `#` line says why. Nothing but `#` lines and rows.
class NcclTestsPrinter final : public Printer {
 public:
  explicit NcclTestsPrinter(std::ostream& out) : out_(&out) {}
  void context(const RunConfig& config, const RunInfo& run) override;
  void point(std::span<const SweepRecord> placements) override;
  void retaken(const SweepRecord& again) override;
  void finalize(const Report& report) override;

 private:
  void close_op();

  std::ostream* out_;
  std::optional<Op> op_;  // the op whose rows are being printed
  std::optional<double> min_bw_gbs_;
  bool checked_ = true;
  double busbw_sum_ = 0;
  int busbw_n_ = 0;
  std::int64_t wrong_ = 0;
};

// nccl-tests' binary for an op ("all_reduce_perf"), and the op a binary name
// stands for (nullopt for any other name).
std::string_view nccl_tests_binary(Op op);
std::optional<Op> op_of_nccl_tests_binary(std::string_view binary);

// The mean busbw of each op's timed points, both placements, in the order the
// ops first appear: what nccl-tests' `# Avg bus bandwidth` is per binary.
std::vector<std::pair<Op, double>> busbw_means_by_op(std::span<const SweepRecord> records);

// A measuring run on the terminal: the header and node list, the topology,
// every phase's section as it ends (through the write_* functions), the cuts
// and the budget, and the sweep as the TablePrinter's table.
class TerminalPrinter final : public Printer {
 public:
  explicit TerminalPrinter(std::ostream& out) : out_(&out), table_(out) {}
  void header(const ToolInfo& tool, const RunInfo& run) override;
  void topology(const ClusterTopology& topology) override;
  void health(const HealthResult& health) override;
  void stragglers(const StragglersResult& stragglers) override;
  void budget_halved(double left_s) override;
  void cut(const Cut& cut) override;
  void context(const RunConfig& config, const RunInfo& run) override { table_.context(config, run); }
  void point(std::span<const SweepRecord> placements) override { table_.point(placements); }
  void retaken(const SweepRecord& again) override { table_.retaken(again); }
  void ladder(const ScaleResult& scaling) override;
  void gpu_ladder(const GpuLadderResult& ladder) override;
  void p2p_header(const P2PSweepResult& shape, std::span<const P2PTest> tests) override;
  void p2p_row(std::span<const P2PRecord> records) override;
  void pairs(const PairsResult& pairs, const std::vector<Finding>& findings) override;
  void islands(const IslandsResult& islands) override;
  void nccl_usage(const NcclUsage& usage) override;
  void model_parallel(const ModelParallelResult& projection) override;
  void bisection(const BisectionResult& bisection) override;
  void storage(const StorageResult& storage) override;
  void budget(const BudgetRecord& budget, std::optional<double> duration_s) override;
  void finalize(const Report& report) override { table_.finalize(report); }

 private:
  std::ostream* out_;
  TablePrinter table_;
};

// The terminal under --quiet: what a script still needs, a line each (the
// findings, the health pass, the budget halving, the islands, bisection and
// storage outcomes) and the sweep's closing lines; no tables.
class QuietPrinter final : public Printer {
 public:
  explicit QuietPrinter(std::ostream& out) : out_(&out), table_(out) {}
  void health(const HealthResult& health) override;
  void stragglers(const StragglersResult& stragglers) override;
  void budget_halved(double left_s) override;
  void pairs(const PairsResult& pairs, const std::vector<Finding>& findings) override;
  void islands(const IslandsResult& islands) override;
  void bisection(const BisectionResult& bisection) override;
  void storage(const StorageResult& storage) override;
  void finalize(const Report& report) override { table_.finalize(report); }

 private:
  std::ostream* out_;
  TablePrinter table_;  // for its closing lines only
};

// The sweep's one-line progress report on `status` (stderr), shown once the
// sweep has lasted a couple of seconds and erased before each point's row.
// The erase goes to `table` (stdout) too: under mpirun the two streams reach
// the terminal through separate pipes, so an erase on stderr alone may land
// after the next row; one on stdout is ordered with the row. Both streams are
// the raw terminal: the erase is an escape sequence of its own.
class ProgressPrinter final : public Printer {
 public:
  // The line goes to `status` (stderr) only: the table's stream never gets a
  // control character, so a file or a parser reading stdout sees rows alone.
  explicit ProgressPrinter(std::ostream& status) : status_(&status) {}
  void context(const RunConfig& config, const RunInfo& run) override;
  void progress(const SweepRecord& next, std::size_t done, std::size_t total) override;
  void point(std::span<const SweepRecord> placements) override;

 private:
  void clear();
  std::ostream* status_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// One line per phase of `run` on `status` (stderr), as it starts, whatever
// stderr is (a terminal, a launcher's pipe, a log file): which phase of how
// many, what it measures, the most it may take and the time so far; then
// the whole run's time at the end. Never on stdout.
class PhasePrinter final : public Printer {
 public:
  explicit PhasePrinter(std::ostream& status) : status_(&status) {}
  void phase(const PhaseNotice& notice) override;
  void budget(const BudgetRecord& budget, std::optional<double> duration_s) override;

 private:
  std::ostream* status_;
};

// "2 min 30 s", "45 s", "1 h 05 min": a duration as people read it.
std::string duration_text(double seconds);

// A failed data check on `errors` (stderr), after everything else: the
// exit status says it to a script, this line to a person reading the log.
class DataCheckPrinter final : public Printer {
 public:
  explicit DataCheckPrinter(std::ostream& errors) : errors_(&errors) {}
  void finalize(const Report& report) override;

 private:
  std::ostream* errors_;
};

// The report as text: per run its tables, verdicts and cost; then the
// comparison (report_writers.hpp).
std::unique_ptr<Printer> make_report_text_printer(std::ostream& out);
// The self-contained HTML page (report_writers.hpp).
std::unique_ptr<Printer> make_html_printer(std::ostream& out);
// The report's CSV (report_writers.hpp).
std::unique_ptr<Printer> make_report_csv_printer(std::ostream& out);

// Builds a printer on a stream.
using PrinterFactory = std::function<std::unique_ptr<Printer>(std::ostream& out)>;

// A printer whose output is a file written whole at finalize (through
// write_file_atomically): `make` builds the inner printer on the file's stream.
std::unique_ptr<Printer> make_file_printer(std::string path, PrinterFactory make);

// A printer for the terminal: each step of the inner printer (built by
// `make` on a buffer) reaches `out` through terminal_safe, so no escape
// sequence from a file's host names, reasons or messages drives the terminal.
std::unique_ptr<Printer> make_terminal_safe_printer(std::ostream& out, const PrinterFactory& make);

// The closing summary of a measuring run: the verdicts as `report` gives
// them, the cost when a price is known, the files written and the next
// command to try; on one rank a loud line that nothing crossed a link.
struct RunSummaryFiles {
  std::string json;
  std::string csv;
};
class RunSummaryPrinter final : public Printer {
 public:
  RunSummaryPrinter(std::ostream& out, RunSummaryFiles files) : out_(&out), files_(std::move(files)) {}
  void finalize(const Report& report) override;

 private:
  std::ostream* out_;
  RunSummaryFiles files_;
};

}  // namespace fabricbench
