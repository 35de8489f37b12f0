#pragma once
// The report as text, CSV and HTML: they format a built Report
// (analysis/report.hpp), each to an injected stream.

#include <iosfwd>
#include <optional>
#include <vector>

#include "fabricbench/analysis/report.hpp"
#include "fabricbench/analysis/verdict.hpp"

namespace fabricbench {

// The terminal report: per run the tables, verdicts and cost; then the
// comparison when there are several runs.
void write_report_text(const Report& report, std::ostream& out);
// The verdicts alone (what `run --expect` prints after its tables).
// The budget: its seconds, the run's wall time, each phase's share and use,
// and every cut with its reason.
void write_budget(const BudgetRecord& budget, std::optional<double> duration_s, std::ostream& out);

// The quick health pass's findings and how soon they came.
void write_health(const HealthResult& health, std::ostream& out);

void write_verdicts(const std::vector<Verdict>& verdicts, Level level, std::ostream& out);
// CSV: one file's records as `run --csv` writes them; several files' comparison
// (op, dtype, placement, size, then per group mean, sd, runs; then ratios to
// the first group).
void write_report_csv(const Report& report, std::ostream& out);
// One self-contained HTML page: inline CSS and SVG charts drawn here, no
// scripts, fonts or links to fetch.
void write_report_html(const Report& report, std::ostream& out);

}  // namespace fabricbench
