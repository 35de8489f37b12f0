#pragma once
// The commands behind main(): everything after the command line is parsed.

#include <memory>

#include "fabricbench/comm.hpp"
#include "fabricbench/config.hpp"
#include "fabricbench/transport.hpp"

namespace fabricbench {

// Exit codes, documented in the README.
inline constexpr int exit_ok = 0;
inline constexpr int exit_usage = 2;        // bad flag or value, unwritable output
inline constexpr int exit_failed = 3;       // the measurement ran and found wrong data
inline constexpr int exit_error = 4;        // a call failed (MPI, CUDA, NCCL, the system), or a timeout
inline constexpr int exit_interrupted = 5;  // SIGINT or SIGTERM ended the run (the files say complete: false)

// The world rank the launcher gave this process (Open MPI, PMIx, PMI, Slurm),
// readable before MPI is initialized; 0 when not launched by one.
int launcher_rank();

// The transport the config asks for, on `comm`. Throws UsageError when it
// is not built in or cannot run here.
std::unique_ptr<Transport> make_transport(TransportChoice choice, const Comm& comm);

// Throws UsageError when the transport cannot run a requested dtype or redop.
void validate_for_transport(const RunConfig& config, const Transport& transport);

// Runs a measuring command (run, sweep) with MPI initialized for its
// duration; returns the exit code. Errors are reported on rank 0 (usage) or
// by the failing rank, which then aborts the job.
int run_measurements(int* argc, char*** argv, const RunConfig& config);

}  // namespace fabricbench
