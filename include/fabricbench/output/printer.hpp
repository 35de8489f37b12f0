#pragma once
// Printers only format. Each writes to an injected stream in three steps, as
// google/benchmark's reporters and nvbench's printers do: the context once
// (what runs and how it measures), each measured point as it completes, and
// the judged report at the end. Several printers run at once through a
// PrinterMultiplex, so a measuring run and `report` feed the same set.

#include <functional>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fabricbench/analysis/report.hpp"
#include "fabricbench/core/config.hpp"
#include "fabricbench/model/result.hpp"

namespace fabricbench {

class Printer {
 public:
  Printer() = default;
  virtual ~Printer() = default;
  Printer(const Printer&) = delete;
  Printer& operator=(const Printer&) = delete;
  Printer(Printer&&) = delete;
  Printer& operator=(Printer&&) = delete;

  // Once, before the first point: the settings of a measuring run.
  virtual void context(const RunConfig& /*config*/, const RunInfo& /*run*/) {}
  // The placements of one point (op, dtype, redop, size), as it completes.
  virtual void point(std::span<const SweepRecord> /*placements*/) {}
  // Once, at the end: the report built from the result(s).
  virtual void finalize(const Report& /*report*/) {}
};

// Hands every step to each of its printers, in the order they were added.
class PrinterMultiplex final : public Printer {
 public:
  void add(std::unique_ptr<Printer> printer);
  [[nodiscard]] std::size_t size() const { return printers_.size(); }
  void context(const RunConfig& config, const RunInfo& run) override;
  void point(std::span<const SweepRecord> placements) override;
  void finalize(const Report& report) override;

 private:
  std::vector<std::unique_ptr<Printer>> printers_;
};

// The terminal table in nccl-tests' column order: a settings header, then
// per point size count type redop root | time algbw busbw #wrong (out of
// place) | the same in place, then p50 p99 iterations of each; at the end
// the per-op averages, the data check and nccl-tests' `# Avg bus bandwidth`.
class TablePrinter final : public Printer {
 public:
  explicit TablePrinter(std::ostream& out) : out_(&out) {}
  void context(const RunConfig& config, const RunInfo& run) override;
  void point(std::span<const SweepRecord> placements) override;
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
