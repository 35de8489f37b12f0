#pragma once
// The one mapping from an exception to the process exit code and the line
// that says why: a UsageError is 2 (exit_usage), any other std::exception is
// 4 (exit_error). Every entry point (main, the MPI job, each rank of a local
// group) runs its body through run_guarded.

#include <functional>
#include <string>

#include "fabricbench/core/exit_codes.hpp"

namespace fabricbench {

struct Guard {
  // Usage errors are raised on every rank alike: only the lead prints one.
  bool lead = true;
  // Named in other errors, "node-a rank 3" ("fabricbench: error on node-a
  // rank 3: ..."); empty: "fabricbench: error: ...".
  std::string where;
  // Called with the message after any other error, before returning
  // exit_error: aborts the rest of the job so no rank waits for this one.
  std::function<void(const std::string& message)> on_error;
};

// body()'s exit code, or the exception's after printing its line on stderr.
int run_guarded(const std::function<int()>& body, const Guard& guard);

}  // namespace fabricbench
