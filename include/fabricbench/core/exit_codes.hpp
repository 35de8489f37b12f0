#pragma once
// The process exit codes, documented in the README.

namespace fabricbench {

inline constexpr int exit_ok = 0;
inline constexpr int exit_usage = 2;        // bad flag or value, unwritable output
inline constexpr int exit_failed = 3;       // the measurement ran and found wrong data
inline constexpr int exit_error = 4;        // a call failed (MPI, CUDA, NCCL, the system), or a timeout
inline constexpr int exit_interrupted = 5;  // SIGINT or SIGTERM ended the run (the files say complete: false)

}  // namespace fabricbench
