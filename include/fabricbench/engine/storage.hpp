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

namespace fabricbench {

struct StorageNode {
  int node = 0;
  std::string host;
  int files = 0;            // writers on this node
  std::uint64_t bytes = 0;  // written (and read) by them together
  double write_s = 0;       // the slowest of its writers, from the common start
  double read_s = 0;
  double write_gbs = 0;  // bytes / write_s, GB = 1e9 bytes
  double read_gbs = 0;
};

struct StorageResult {
  std::string path;
  std::string io_mode;  // "direct" (O_DIRECT) or "buffered"
  std::string io_note;  // why buffered, when it is
  std::uint64_t file_bytes = 0;
  std::uint64_t block_bytes = 0;  // one write or read call
  bool per_node = false;
  int files_written = 0;
  int files_removed = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t bytes_read = 0;
  double write_s = 0;  // the slowest writer's time, from the common start
  double read_s = 0;
  double write_gbs = 0;  // aggregate: all bytes / the slowest writer's time
  double read_gbs = 0;
  std::vector<StorageNode> nodes;
  std::optional<int> slowest_write_node;  // with 2 or more nodes
  std::optional<int> slowest_read_node;
  std::uint64_t wrong_blocks = 0;       // 4 KiB blocks read back unlike what was written
  std::vector<std::string> files_left;  // the test files that could not be removed: delete by hand
  std::string message;
};

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

// Per-node rows, aggregate figures, the slowest node and the message, from
// the rows' bytes and times (pure; run_storage calls it on rank 0).
void analyze_storage(StorageResult& result);

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
