#include "fabricbench/output/printer.hpp"

#include <ostream>
#include <utility>

#include <fmt/format.h>

#include "fabricbench/core/text.hpp"
#include "fabricbench/output/file_writers.hpp"
#include "fabricbench/output/output.hpp"
#include "fabricbench/output/sections.hpp"
#include "fabricbench/output/terminal_stream.hpp"
#include "fabricbench/results/result_csv.hpp"

namespace fabricbench {
namespace {

class ReportTextPrinter final : public Printer {
 public:
  explicit ReportTextPrinter(std::ostream& out) : out_(&out) {}
  void finalize(const Report& report) override { print_report(report, *out_); }

 private:
  std::ostream* out_;
};

class HtmlPrinter final : public Printer {
 public:
  explicit HtmlPrinter(std::ostream& out) : out_(&out) {}
  void finalize(const Report& report) override { write_report_html(report, *out_); }

 private:
  std::ostream* out_;
};

class ReportCsvPrinter final : public Printer {
 public:
  explicit ReportCsvPrinter(std::ostream& out) : out_(&out) {}
  void finalize(const Report& report) override { write_report_csv(report, *out_); }

 private:
  std::ostream* out_;
};

class FilePrinter final : public Printer {
 public:
  FilePrinter(std::string path, PrinterFactory make) : path_(std::move(path)), make_(std::move(make)) {}
  void finalize(const Report& report) override {
    write_file_atomically(path_, [&](std::ostream& out) { make_(out)->finalize(report); });
  }

 private:
  std::string path_;
  PrinterFactory make_;
};

class TerminalSafePrinter final : public Printer {
 public:
  TerminalSafePrinter(std::ostream& out, const PrinterFactory& make) : safe_(out), inner_(make(safe_)) {}
  void header(const ToolInfo& tool, const RunInfo& run) override {
    step([&](Printer& p) { p.header(tool, run); });
  }
  void topology(const ClusterTopology& topology) override {
    step([&](Printer& p) { p.topology(topology); });
  }
  void health(const HealthResult& health) override {
    step([&](Printer& p) { p.health(health); });
  }
  void stragglers(const StragglersResult& stragglers) override {
    step([&](Printer& p) { p.stragglers(stragglers); });
  }
  void budget_halved(double left_s) override {
    step([&](Printer& p) { p.budget_halved(left_s); });
  }
  void cut(const Cut& cut) override {
    step([&](Printer& p) { p.cut(cut); });
  }
  void context(const RunConfig& config, const RunInfo& run) override {
    step([&](Printer& p) { p.context(config, run); });
  }
  void progress(const SweepRecord& next, std::size_t done, std::size_t total) override {
    step([&](Printer& p) { p.progress(next, done, total); });
  }
  void point(std::span<const SweepRecord> placements) override {
    step([&](Printer& p) { p.point(placements); });
  }
  void retaken(const SweepRecord& again) override {
    step([&](Printer& p) { p.retaken(again); });
  }
  void ladder(const ScaleResult& scaling) override {
    step([&](Printer& p) { p.ladder(scaling); });
  }
  void gpu_ladder(const GpuLadderResult& ladder) override {
    step([&](Printer& p) { p.gpu_ladder(ladder); });
  }
  void p2p_header(const P2PSweepResult& shape, std::span<const P2PTest> tests) override {
    step([&](Printer& p) { p.p2p_header(shape, tests); });
  }
  void p2p_row(std::span<const P2PRecord> records) override {
    step([&](Printer& p) { p.p2p_row(records); });
  }
  void pairs(const PairsResult& pairs, const std::vector<Finding>& findings) override {
    step([&](Printer& p) { p.pairs(pairs, findings); });
  }
  void islands(const IslandsResult& islands) override {
    step([&](Printer& p) { p.islands(islands); });
  }
  void nccl_usage(const NcclUsage& usage) override {
    step([&](Printer& p) { p.nccl_usage(usage); });
  }
  void model_parallel(const ModelParallelResult& projection) override {
    step([&](Printer& p) { p.model_parallel(projection); });
  }
  void bisection(const BisectionResult& bisection) override {
    step([&](Printer& p) { p.bisection(bisection); });
  }
  void storage(const StorageResult& storage) override {
    step([&](Printer& p) { p.storage(storage); });
  }
  void budget(const BudgetRecord& budget, std::optional<double> duration_s) override {
    step([&](Printer& p) { p.budget(budget, duration_s); });
  }
  void finalize(const Report& report) override {
    step([&](Printer& p) { p.finalize(report); });
  }

 private:
  // Flushed after each step, so a step's lines reach the terminal as its
  // phase ends, not when the next fills the buffer.
  template <typename Step>
  void step(const Step& s) {
    s(*inner_);
    safe_.flush();
  }
  TerminalSafeStream safe_;  // before inner_, which is built on it
  std::unique_ptr<Printer> inner_;
};

}  // namespace

void PrinterMultiplex::add(std::unique_ptr<Printer> printer) { printers_.push_back(std::move(printer)); }

void PrinterMultiplex::header(const ToolInfo& tool, const RunInfo& run) {
  for (const auto& p : printers_) p->header(tool, run);
}

void PrinterMultiplex::topology(const ClusterTopology& topology) {
  for (const auto& p : printers_) p->topology(topology);
}

void PrinterMultiplex::health(const HealthResult& health) {
  for (const auto& p : printers_) p->health(health);
}

void PrinterMultiplex::stragglers(const StragglersResult& stragglers) {
  for (const auto& p : printers_) p->stragglers(stragglers);
}

void PrinterMultiplex::budget_halved(double left_s) {
  for (const auto& p : printers_) p->budget_halved(left_s);
}

void PrinterMultiplex::phase(const PhaseNotice& notice) {
  for (const auto& p : printers_) p->phase(notice);
}

void PrinterMultiplex::cut(const Cut& cut) {
  for (const auto& p : printers_) p->cut(cut);
}

void PrinterMultiplex::context(const RunConfig& config, const RunInfo& run) {
  for (const auto& p : printers_) p->context(config, run);
}

void PrinterMultiplex::progress(const SweepRecord& next, std::size_t done, std::size_t total) {
  for (const auto& p : printers_) p->progress(next, done, total);
}

void PrinterMultiplex::point(std::span<const SweepRecord> placements) {
  for (const auto& p : printers_) p->point(placements);
}

void PrinterMultiplex::retaken(const SweepRecord& again) {
  for (const auto& p : printers_) p->retaken(again);
}

void PrinterMultiplex::ladder(const ScaleResult& scaling) {
  for (const auto& p : printers_) p->ladder(scaling);
}

void PrinterMultiplex::gpu_ladder(const GpuLadderResult& ladder) {
  for (const auto& p : printers_) p->gpu_ladder(ladder);
}

void PrinterMultiplex::p2p_header(const P2PSweepResult& shape, std::span<const P2PTest> tests) {
  for (const auto& p : printers_) p->p2p_header(shape, tests);
}

void PrinterMultiplex::p2p_row(std::span<const P2PRecord> records) {
  for (const auto& p : printers_) p->p2p_row(records);
}

void PrinterMultiplex::pairs(const PairsResult& pairs, const std::vector<Finding>& findings) {
  for (const auto& p : printers_) p->pairs(pairs, findings);
}

void PrinterMultiplex::islands(const IslandsResult& islands) {
  for (const auto& p : printers_) p->islands(islands);
}

void PrinterMultiplex::nccl_usage(const NcclUsage& usage) {
  for (const auto& p : printers_) p->nccl_usage(usage);
}

void PrinterMultiplex::model_parallel(const ModelParallelResult& projection) {
  for (const auto& p : printers_) p->model_parallel(projection);
}

void PrinterMultiplex::bisection(const BisectionResult& bisection) {
  for (const auto& p : printers_) p->bisection(bisection);
}

void PrinterMultiplex::storage(const StorageResult& storage) {
  for (const auto& p : printers_) p->storage(storage);
}

void PrinterMultiplex::budget(const BudgetRecord& budget, std::optional<double> duration_s) {
  for (const auto& p : printers_) p->budget(budget, duration_s);
}

void PrinterMultiplex::finalize(const Report& report) {
  for (const auto& p : printers_) p->finalize(report);
}

std::unique_ptr<Printer> make_report_text_printer(std::ostream& out) {
  return std::make_unique<ReportTextPrinter>(out);
}
std::unique_ptr<Printer> make_html_printer(std::ostream& out) { return std::make_unique<HtmlPrinter>(out); }
std::unique_ptr<Printer> make_report_csv_printer(std::ostream& out) { return std::make_unique<ReportCsvPrinter>(out); }

std::unique_ptr<Printer> make_file_printer(std::string path, PrinterFactory make) {
  return std::make_unique<FilePrinter>(std::move(path), std::move(make));
}

std::unique_ptr<Printer> make_terminal_safe_printer(std::ostream& out, const PrinterFactory& make) {
  return std::make_unique<TerminalSafePrinter>(out, make);
}

void RunSummaryPrinter::finalize(const Report& report) {
  if (report.runs.empty()) return;
  const ReportRun& run = report.runs.front();
  const RunResult& r = run.result;
  std::ostream& out = *out_;
  out << "#\n# Summary\n";
  // A storage test alone on one rank crosses no link and needs none.
  if (r.run.ranks == 1 && !(r.storage && r.records.empty() && !r.pairs && !r.scaling))
    out << fmt::format("# !!! 1 rank: nothing crosses a link; launch with mpirun -np <{}> !!!\n",
                       unit_word(r) == "GPUs" ? "GPUs" : "ranks");
  print_decision(run, out);
  if (run.cost) {
    const CostSummary& c = *run.cost;
    out << fmt::format("# Cost at {}: this run {}\n", price_text(c, r), run_cost_text(c, r));
    if (c.model_parallel && r.model_parallel)
      out << fmt::format("# Cost of model-parallel training (tp {} x pp {} x dp {}, {} {}): {} per 1000 steps\n",
                         r.model_parallel->tp, r.model_parallel->pp, r.model_parallel->dp, c.model_parallel->gpus,
                         unit_word(r), money_text(c.model_parallel->per_1000_steps, c.price.currency));
  }
  if (files_.json.empty() && files_.csv.empty()) {
    out << "# Files: none written (--json r.json keeps the result)\n";
    out << "# Next: fabricbench " << (r.run.command_line.size() > 1 ? r.run.command_line[1] : std::string("run"))
        << " --json r.json, then fabricbench report r.json --html r.html\n";
  } else {
    out << "# Files:";
    if (!files_.json.empty()) out << ' ' << files_.json;
    if (!files_.csv.empty()) {
      out << ' ' << files_.csv;
      for (const CsvTable& table : section_csv_tables(r)) out << ' ' << section_csv_path(files_.csv, table.section);
    }
    out << '\n';
    if (!files_.json.empty())
      out << fmt::format("# Next: fabricbench report {} --html {}.html\n", files_.json,
                         files_.json.size() > 5 && files_.json.ends_with(".json")
                             ? files_.json.substr(0, files_.json.size() - 5)
                             : files_.json);
    else
      out << "# Next: add --json r.json, then fabricbench report r.json --html r.html\n";
  }
  out << std::flush;
}

}  // namespace fabricbench
