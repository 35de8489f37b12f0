#include "fabricbench/output/printer.hpp"

#include <ostream>
#include <utility>

#include <fmt/format.h>

#include "fabricbench/output/output.hpp"
#include "fabricbench/output/report_writers.hpp"
#include "fabricbench/output/terminal_stream.hpp"

namespace fabricbench {
namespace {

class ReportTextPrinter final : public Printer {
 public:
  explicit ReportTextPrinter(std::ostream& out) : out_(&out) {}
  void finalize(const Report& report) override { write_report_text(report, *out_); }

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
  void context(const RunConfig& config, const RunInfo& run) override {
    inner_->context(config, run);
    safe_.flush();
  }
  void point(std::span<const SweepRecord> placements) override {
    inner_->point(placements);
    safe_.flush();
  }
  void finalize(const Report& report) override {
    inner_->finalize(report);
    safe_.flush();
  }

 private:
  TerminalSafeStream safe_;  // before inner_, which is built on it
  std::unique_ptr<Printer> inner_;
};

std::string money(double v) { return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.4g}", v); }

}  // namespace

void PrinterMultiplex::add(std::unique_ptr<Printer> printer) { printers_.push_back(std::move(printer)); }

void PrinterMultiplex::context(const RunConfig& config, const RunInfo& run) {
  for (const auto& p : printers_) p->context(config, run);
}

void PrinterMultiplex::point(std::span<const SweepRecord> placements) {
  for (const auto& p : printers_) p->point(placements);
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
  write_verdicts(run.verdicts, run.level, out);
  if (run.cost) {
    const CostSummary& c = *run.cost;
    const std::string unit = unit_word(r) == "GPUs" ? "GPU" : "rank";
    out << fmt::format("# Cost at {}: ", c.price.per_gpu_hour
                                             ? fmt::format("{} per {}-hour", money(*c.price.per_gpu_hour), unit)
                                             : fmt::format("{} per node-hour", money(*c.price.per_node_hour)));
    if (c.run_cost)
      out << fmt::format("this run {} ({:.1f} s on {} {}, {} node{})\n", money(*c.run_cost), r.duration_s.value_or(0),
                         r.run.ranks, unit_word(r), r.run.nodes, r.run.nodes == 1 ? "" : "s");
    else
      out << "this run unknown (" << c.why_no_run_cost << ")\n";
    if (c.model_parallel && r.model_parallel)
      out << fmt::format("# Cost of model-parallel training (tp {} x pp {} x dp {}, {} {}): {} per 1000 steps\n",
                         r.model_parallel->tp, r.model_parallel->pp, r.model_parallel->dp, c.model_parallel->gpus,
                         unit_word(r), money(c.model_parallel->per_1000_steps));
  }
  if (files_.json.empty() && files_.csv.empty()) {
    out << "# Files: none written (--json r.json keeps the result)\n";
    out << "# Next: fabricbench " << (r.run.command_line.size() > 1 ? r.run.command_line[1] : std::string("run"))
        << " --json r.json, then fabricbench report r.json --html r.html\n";
  } else {
    out << "# Files:";
    if (!files_.json.empty()) out << ' ' << files_.json;
    if (!files_.csv.empty()) out << ' ' << files_.csv;
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
