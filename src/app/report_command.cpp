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
#include "fabricbench/model/reader.hpp"
#include "fabricbench/output/output.hpp"
#include "fabricbench/output/report_writers.hpp"

namespace fabricbench {

int run_report(const RunConfig& config, std::ostream& out) {
  const ReportConfig& rc = config.report;
  for (const std::string& e : rc.expects) (void)parse_gate(e);  // bad expressions before any file is read
  if (!config.csv_path.empty()) check_writable(config.csv_path, "--csv");
  if (!rc.html_path.empty()) check_writable(rc.html_path, "--html");
  check_distinct_outputs({{"--csv", config.csv_path}, {"--html", rc.html_path}}, rc.files);
  std::vector<ReportRun> runs;
  for (const std::string& path : rc.files) runs.push_back({path, read_result_file(path), {}, Level::ok, {}});
  const Report report = build_report(std::move(runs), rc, builtin_expectations());
  // The text holds host names, reasons and messages from the files: no
  // escape sequence of theirs reaches the terminal.
  std::ostringstream text;
  if (!config.quiet)
    write_report_text(report, text);
  else
    text << fmt::format("# Verdict: {}\n", name(report.level));
  out << terminal_safe(text.str());
  if (!config.csv_path.empty())
    write_file_atomically(config.csv_path, [&report](std::ostream& o) { write_report_csv(report, o); });
  if (!rc.html_path.empty())
    write_file_atomically(rc.html_path, [&report](std::ostream& o) { write_report_html(report, o); });
  return report.exit_code;
}

}  // namespace fabricbench
