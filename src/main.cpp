// fabricbench: parse, dispatch, catch, exit code. Everything else is in the
// library.

#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "fabricbench/app/app.hpp"
#include "fabricbench/app/build_info.hpp"
#include "fabricbench/app/cli.hpp"
#include "fabricbench/app/exit_status.hpp"
#include "fabricbench/app/report_command.hpp"
#include "fabricbench/core/error.hpp"

namespace {

// A bad command line fails on every rank alike, before MPI starts, and only
// the lead prints why. mpirun ends the whole job when the first rank exits
// non-zero, so a rank that exits at once can get the lead killed before its
// line is written. The other ranks give the lead time to print and exit
// first (mpirun then ends them); they exit on their own after the grace, so
// a command line that failed on them alone cannot hang the job.
void give_the_lead_time_to_report() {
  constexpr auto grace = std::chrono::seconds(5);
  std::this_thread::sleep_for(grace);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fabricbench;
  const bool lead = launcher_rank() == 0;
  return run_guarded(
      [&] {
        ParseOutcome parsed;
        try {
          parsed = parse_command_line(
              arguments_for_program(argc > 0 ? argv[0] : "", std::vector<std::string>(argv + 1, argv + argc)));
        } catch (const UsageError&) {
          if (!lead) give_the_lead_time_to_report();
          throw;
        }
        const auto measure = [&] {
          try {
            return run_measurements(&argc, &argv, parsed.config);
          } catch (const UsageError&) {  // refused before MPI is up: the lead alone says why
            if (!lead) give_the_lead_time_to_report();
            throw;
          }
        };
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
        return measure();
      },
      Guard{lead, {}, {}});
}
