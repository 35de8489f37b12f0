// fabricbench: parse, dispatch, catch, exit code. Everything else is in the
// library.

#include <iostream>
#include <string>
#include <vector>

#include "fabricbench/app/app.hpp"
#include "fabricbench/app/build_info.hpp"
#include "fabricbench/app/cli.hpp"
#include "fabricbench/app/exit_status.hpp"
#include "fabricbench/app/report_command.hpp"

int main(int argc, char** argv) {
  using namespace fabricbench;
  const bool lead = launcher_rank() == 0;
  return run_guarded(
      [&] {
        const ParseOutcome parsed = parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
        if (parsed.exit_now) {
          if (lead) std::cout << parsed.text;
          return parsed.exit_code;
        }
        if (parsed.config.command == Command::version) {
          if (lead) std::cout << version_text();
          return exit_ok;
        }
        // Reports read files only: no MPI, no transport.
        if (parsed.config.command == Command::report) return run_report(parsed.config, std::cout);
        return run_measurements(&argc, &argv, parsed.config);
      },
      Guard{lead, {}, {}});
}
