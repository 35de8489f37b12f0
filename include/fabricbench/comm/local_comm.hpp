#pragma once
// Process groups without MPI, for the same engine and output:
//  - threads: one thread per local GPU in one process (`--gpus N`);
//  - processes: ranks started by hand (or a script), meeting in a shared
//    directory named by FABRICBENCH_BOOTSTRAP, with FABRICBENCH_RANK and
//    FABRICBENCH_WORLD_SIZE. Rank 0 needs no special role: every collective is
//    an exchange of small files, so the directory must be fresh for each run
//    and on a file system all ranks see (one node: /tmp or /dev/shm).
// Both carry only the engine's coordination (small values); the data moves
// through NCCL. Every wait has a deadline and ends in a SystemError naming the
// members that did not arrive.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/comm/comm.hpp"

namespace fabricbench {

// `size` members of one group; element i is rank i and must be used by one
// thread only. Collectives wait at most `timeout` for the other members.
std::vector<Comm> make_thread_comms(int size, std::chrono::milliseconds timeout);

// Marks the group of `member` failed: every member's pending and later
// collectives throw SystemError with `why` (a thread failed and will not come).
void fail_group(const Comm& member, const std::string& why) noexcept;

// Rank `rank` of `size` processes meeting in `directory` (created if needed).
Comm make_file_comm(const std::string& directory, int rank, int size, std::chrono::milliseconds timeout);

// From FABRICBENCH_BOOTSTRAP / FABRICBENCH_RANK / FABRICBENCH_WORLD_SIZE when
// FABRICBENCH_BOOTSTRAP is set; throws UsageError when they are inconsistent.
std::optional<Comm> file_comm_from_environment(std::chrono::milliseconds timeout);

// Whether `comm` is one of the groups above (not MPI, not the lone process).
bool is_local_group(const Comm& comm);

}  // namespace fabricbench
