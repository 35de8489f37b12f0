#pragma once
// The command line: `fabricbench [run|sweep|version] [options]`.

#include <string>
#include <vector>

#include "fabricbench/core/config.hpp"

namespace fabricbench {

// What parsing decided: a config to run, or text to print and an exit code
// (help, version flags). Throws UsageError with one line naming the flag and
// value for bad input. Checks that need the rank count or the transport come
// later (validate_for_world).
struct ParseOutcome {
  RunConfig config;
  bool exit_now = false;
  int exit_code = 0;
  std::string text;  // help text to print when exit_now
};

ParseOutcome parse_command_line(const std::vector<std::string>& args);

// The arguments as fabricbench reads them, given the name it was started by:
// under an nccl-tests binary's name (a link named all_reduce_perf, ...) that
// binary's run, `sweep --ops <its op> --format nccl-tests` before the rest;
// under any other name, the arguments as given.
std::vector<std::string> arguments_for_program(const std::string& program, std::vector<std::string> args);

// Checks that need the world: root within the rank count, sizes that are
// multiples of every element size. Throws UsageError.
void validate_for_world(const RunConfig& config, int nranks);

}  // namespace fabricbench
