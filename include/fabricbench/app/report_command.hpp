#pragma once
// The `report` command: saved results in, report out.

#include <iosfwd>

#include "fabricbench/core/config.hpp"

namespace fabricbench {

// `fabricbench report`: reads config.report.files, prints the report, writes
// --csv and --html; returns the exit code. Throws UsageError for bad input.
int run_report(const RunConfig& config, std::ostream& out);

}  // namespace fabricbench
