#include "fabricbench/app/report_command.hpp"

#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fabricbench/analysis/report.hpp"
#include "fabricbench/analysis/verdict.hpp"
#include "fabricbench/core/safe_file.hpp"
#include "fabricbench/core/text_safety.hpp"
#include "fabricbench/output/output.hpp"
#include "fabricbench/output/printer.hpp"
#include "fabricbench/results/reader.hpp"

namespace fabricbench {

int run_report(const RunConfig& config, std::ostream& out) {
  const ReportConfig& rc = config.report;
  for (const std::string& e : rc.expects) (void)parse_gate(e);  // bad expressions before any file is read
  if (!config.csv_path.empty()) check_writable(config.csv_path, "--csv");
  if (!rc.html_path.empty()) check_writable(rc.html_path, "--html");
  // One file's --csv writes its sections beside it too (output.hpp: csv_outputs).
  std::vector<NamedOutput> outputs =
      rc.files.size() == 1 ? csv_outputs(config.csv_path) : std::vector<NamedOutput>{{"--csv", config.csv_path}};
  outputs.push_back({"--html", rc.html_path});
  check_distinct_outputs(outputs, rc.files);
  std::vector<ReportRun> runs;
  for (const std::string& path : rc.files) runs.push_back({path, read_result_file(path), {}, Level::ok, {}});
  const Report report = build_report(std::move(runs), rc, expectations_with(rc.expectations_text));
  // The text holds host names, reasons and messages from the files: no
  // escape sequence of theirs reaches the terminal.
  PrinterMultiplex printers;
  if (!config.quiet)
    printers.add(make_terminal_safe_printer(out, make_report_text_printer));
  else
    out << terminal_safe(fmt::format("# Verdict: {}\n", name(report.level)));
  if (!config.csv_path.empty()) printers.add(make_file_printer(config.csv_path, make_report_csv_printer));
  if (!rc.html_path.empty()) printers.add(make_file_printer(rc.html_path, make_html_printer));
  printers.finalize(report);
  // One file: its other sections beside its records, as `run --csv` writes them.
  if (!config.csv_path.empty() && report.runs.size() == 1)
    write_section_csv_files(config.csv_path, report.runs.front().result);
  return report.exit_code;
}

}  // namespace fabricbench
