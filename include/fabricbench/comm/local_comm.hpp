#pragma once
// Process groups without MPI, for the same engine and output:
//  - threads: one thread per local GPU in one process (`--gpus N`);
//  - processes: ranks started by hand (or a script), meeting in a shared
//    directory named by FABRICBENCH_BOOTSTRAP, with FABRICBENCH_RANK and
//    FABRICBENCH_WORLD_SIZE. Every collective is an exchange of small files;
//    rank 0 only starts the group: it makes a fresh subfolder for it and
//    announces it, so what an earlier group left is never read as this
//    group's, and a second group in the same directory at the same time is
//    refused (UsageError, naming the directory). The directory must be on a
//    file system all ranks see and that has flock() (one node: /tmp or
//    /dev/shm).
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
// Rank 0 returns at once; another rank waits at most `timeout` for rank 0's
// announcement. Throws UsageError when the directory is not private or
// another group is using it.
Comm make_file_comm(const std::string& directory, int rank, int size, std::chrono::milliseconds timeout);

// From FABRICBENCH_BOOTSTRAP / FABRICBENCH_RANK / FABRICBENCH_WORLD_SIZE when
// FABRICBENCH_BOOTSTRAP is set; throws UsageError when they are inconsistent.
std::optional<Comm> file_comm_from_environment(std::chrono::milliseconds timeout);

// The folder where the group of `member`, a process meeting in a folder,
// exchanges its files (a fresh subfolder of the directory for each group);
// empty for any other group. For messages and tests.
std::string exchange_folder(const Comm& member);

// Whether `comm` is one of the groups above (not MPI, not the lone process).
bool is_local_group(const Comm& comm);

}  // namespace fabricbench
