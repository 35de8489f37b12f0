#pragma once
// Shared storage from every node at once: every writer (each rank, or one
// per node) writes its own file in one folder, all at the same time, then
// reads it back, and the files are removed afterwards — also when a signal or
// the deadline ends the run (the watchdog's cleanup), and then each rank
// removes every file of the run it can see, so a rank killed outright
// (SIGKILL) leaves nothing where another rank reaches; what stays is named.
// Real files through the
// operating system: O_DIRECT where the file system takes it, so the page
// cache neither absorbs the writes nor serves the reads; elsewhere buffered
// I/O with fsync after the writes and the cached pages dropped before the
// reads, on files larger than the node's memory share.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/comm/layout.hpp"
#include "fabricbench/core/config.hpp"
#include "fabricbench/records/storage.hpp"

namespace fabricbench {

// What an unfinished storage test can still say, when a signal or the
// deadline ends it and some of its files could not be removed: the
// configuration, files_written (the files made), files_removed, files_left
// and the message; no figures. Called on the watchdog's thread, before its
// last words (so the lead rank can save it).
using StorageEnded = std::function<void(const StorageResult&)>;

// Why `dir` cannot hold the test's files, or empty: it must exist, be a
// folder that is neither immutable nor append-only, and take a new file that
// can be removed again (tried with a temporary, removed at once; named in the
// message when it stays).
std::string storage_path_problem(const std::string& dir);

// The file size when none is given: 1 GiB with O_DIRECT; buffered, twice
// this writer's share of the node's memory (so the page cache cannot hold
// the file), at least 1 GiB; rounded up to whole MiB.
std::uint64_t default_file_bytes(bool direct, std::uint64_t node_memory_bytes, int writers_on_node);

// Collective over `world`; the result is complete on world rank 0. A folder
// that cannot be used on any rank is a UsageError on every rank (exit 2),
// before anything is written. When a signal or the deadline ends the test,
// the watchdog's cleanup on this rank removes the run's files it sees (its
// own, its node's by device and inode, another node's on a shared file
// system by inode); those it cannot remove it names in the error line and
// hands to `on_end`.
StorageResult run_storage(const RunConfig& config, const Comm& world, const Layout& layout,
                          const StorageEnded& on_end = {});

}  // namespace fabricbench
