#pragma once
// The commands behind main(): everything after the command line is parsed.

#include "fabricbench/core/config.hpp"
#include "fabricbench/core/exit_codes.hpp"
#include "fabricbench/transport/transport.hpp"

namespace fabricbench {

// The world rank the launcher gave this process (Open MPI, PMIx, PMI, Slurm),
// readable before MPI is initialized; 0 when not launched by one.
int launcher_rank();

// Throws UsageError when the transport cannot run a requested dtype or redop.
void validate_for_transport(const RunConfig& config, const Transport& transport);

// Runs a measuring command (run, sweep) with MPI initialized for its
// duration; returns the exit code. Errors are reported on rank 0 (usage) or
// by the failing rank, which then aborts the job.
int run_measurements(int* argc, char*** argv, const RunConfig& config);

}  // namespace fabricbench
