#include "fabricbench/app/report_command.hpp"

#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fabricbench/analysis/report.hpp"
#include "fabricbench/analysis/verdict.hpp"
#include "fabricbench/model/reader.hpp"
#include "fabricbench/output/output.hpp"
#include "fabricbench/output/report_writers.hpp"

namespace fabricbench {

int run_report(const RunConfig& config, std::ostream& out) {
  const ReportConfig& rc = config.report;
  for (const std::string& e : rc.expects) (void)parse_gate(e);  // bad expressions before any file is read
  if (!config.csv_path.empty()) check_writable(config.csv_path, "--csv");
  if (!rc.html_path.empty()) check_writable(rc.html_path, "--html");
  std::vector<ReportRun> runs;
  for (const std::string& path : rc.files) runs.push_back({path, read_result_file(path), {}, Level::ok, {}});
  const Report report = build_report(std::move(runs), rc, builtin_expectations());
  if (!config.quiet)
    write_report_text(report, out);
  else
    out << fmt::format("# Verdict: {}\n", name(report.level));
  if (!config.csv_path.empty())
    write_file_atomically(config.csv_path, [&report](std::ostream& o) { write_report_csv(report, o); });
  if (!rc.html_path.empty())
    write_file_atomically(rc.html_path, [&report](std::ostream& o) { write_report_html(report, o); });
  return report.exit_code;
}

}  // namespace fabricbench
