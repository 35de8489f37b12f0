// fabricbench: parse, dispatch, catch, exit code. Everything else is in the
// library.

#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "fabricbench/app.hpp"
#include "fabricbench/build_info.hpp"
#include "fabricbench/cli.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/report.hpp"
#include "fabricbench/text_safety.hpp"

int main(int argc, char** argv) {
  using namespace fabricbench;
  const bool lead = launcher_rank() == 0;
  try {
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
  } catch (const UsageError& e) {
    if (lead) std::cerr << "fabricbench: error: " << terminal_safe(e.what()) << '\n';
    return exit_usage;
  } catch (const std::exception& e) {
    std::cerr << "fabricbench: error: " << terminal_safe(e.what()) << '\n';
    return exit_error;
  }
}
