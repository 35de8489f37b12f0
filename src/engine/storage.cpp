#include "fabricbench/engine/storage.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"
#include "fabricbench/core/fd.hpp"
#include "fabricbench/core/safe_file.hpp"
#include "fabricbench/core/sizes.hpp"
#include "fabricbench/core/stats.hpp"
#include "fabricbench/core/watchdog.hpp"

namespace fabricbench {
namespace {

constexpr std::uint64_t page_bytes = storage_block_bytes;  // also the O_DIRECT alignment
constexpr std::uint64_t io_block_bytes = std::uint64_t{4} << 20;
constexpr std::uint64_t gib = std::uint64_t{1} << 30;
constexpr std::uint64_t mib = std::uint64_t{1} << 20;

// This rank's file: created with mkstemp (a name nobody can predict or plant
// a link on), removed by the owner's destructor and, on a signal or the
// deadline, by the watchdog's cleanup (which later covers the other ranks'
// files too: run_storage).
class TestFile {
 public:
  TestFile() = default;
  TestFile(const TestFile&) = delete;
  TestFile& operator=(const TestFile&) = delete;
  ~TestFile() {
    Watchdog::set_cleanup({});
    // Only an error unwinds to here with the file still there: its line
    // comes from the error's path, this one names what stayed.
    const std::string path = path_;
    if (!remove() && !path.empty() && errno != ENOENT)
      std::cerr << fmt::format("fabricbench: error: could not remove the storage test file {}: {}; delete it by hand\n",
                               path, errno_text(errno));
  }

  // Empty on success, else why not. The file and its cleanup come in one
  // step: a signal waits for both, never finds the file without the cleanup.
  std::string create(const std::string& dir, const std::string& host, int rank) {
    std::string why;
    Watchdog::create_with_cleanup([&]() -> std::function<void()> {
      std::string pattern = fmt::format("{}/.fabricbench-storage-{}-r{}-XXXXXX", dir, host, rank);
      std::vector<char> name(pattern.begin(), pattern.end());
      name.push_back('\0');
      const int fd = ::mkstemp(name.data());
      if (fd < 0) {
        why = fmt::format("--storage-path {}: cannot create a file there: {}", dir, errno_text(errno));
        return {};
      }
      struct stat st {};
      if (::fstat(fd, &st) == 0) {
        dev_ = st.st_dev;
        ino_ = st.st_ino;
      }
      ::close(fd);
      path_ = name.data();
      return [registered = path_] { ::unlink(registered.c_str()); };
    });
    return why;
  }

  // True when the file was there and is gone; errno says why not.
  bool remove() {
    if (path_.empty()) return false;
    const bool removed = ::unlink(path_.c_str()) == 0;
    const int err = errno;
    path_.clear();
    errno = err;
    return removed;
  }

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::uint64_t dev() const { return dev_; }
  [[nodiscard]] std::uint64_t ino() const { return ino_; }

 private:
  std::string path_;
  std::uint64_t dev_ = 0;
  std::uint64_t ino_ = 0;
};

// Where a writer's file is, as its rank reports it once created: the node,
// and the device and inode the name must still lead to before another rank
// removes it (so a name that now holds anything else is never touched).
struct FileId {
  int node = 0;
  int writer = 0;  // 0: this rank made no file
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
};

struct RunFile {
  std::string path;
  FileId id;
};

// A name that stayed, and why.
struct Leftover {
  std::string path;
  std::string why;
};

// Removes every file of `files` this rank sees as the run's own: on its own
// node the same device and inode; on another node (a shared file system,
// whose device numbers differ between hosts) the same inode. A name not seen
// here is gone or on another node's own disk (that node's ranks see to it).
// Returns those still there.
std::vector<Leftover> remove_run_files(const std::vector<RunFile>& files, int node) {
  std::vector<Leftover> left;
  for (const RunFile& f : files) {
    struct stat st {};
    if (::lstat(f.path.c_str(), &st) != 0) continue;
    const bool ours = S_ISREG(st.st_mode) && st.st_ino == f.id.ino && (f.id.node != node || st.st_dev == f.id.dev);
    if (!ours) continue;
    if (::unlink(f.path.c_str()) == 0 || errno == ENOENT) continue;
    left.push_back({f.path, errno_text(errno)});
  }
  return left;
}

// The watchdog's cleanup once every writer's file is known: a rank killed
// outright (SIGKILL, the OOM killer) removes nothing itself, so each rank
// that ends on a signal or the deadline removes every file of the run it can
// see, its own first. What cannot be removed is named: in the error line
// (thrown; the watchdog prints it) and, through `on_end`, in the record the
// lead saves. `known` holds what the record can say by now.
void arm_cleanup(std::vector<RunFile> files, int node, std::string where, StorageResult known, StorageEnded on_end) {
  Watchdog::set_cleanup(
      [files = std::move(files), node, where = std::move(where), known = std::move(known), on_end = std::move(on_end)] {
        const std::vector<Leftover> left = remove_run_files(files, node);
        if (left.empty()) return;
        StorageResult cut = known;
        std::string named;
        for (const Leftover& l : left) {
          cut.files_left.push_back(l.path);
          named += fmt::format("{}{} ({})", named.empty() ? "" : ", ", l.path, l.why);
        }
        cut.files_removed = cut.files_written - std::min(cut.files_written, static_cast<int>(left.size()));
        cut.message = fmt::format(
            "the storage test did not finish; {} of its {} files could not be removed: {}; delete "
            "them by hand",
            left.size(), cut.files_written, join_paths(cut.files_left));
        if (on_end) on_end(cut);
        throw SystemError(fmt::format("{} could not remove {} storage test file{} of this run: {}; delete {} by hand",
                                      where, left.size(), left.size() == 1 ? "" : "s", named,
                                      left.size() == 1 ? "it" : "them"));
      });
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }  // NOLINT(cppcoreguidelines-no-malloc)
};
using Buffer = std::unique_ptr<std::byte, AlignedFree>;

Buffer aligned_buffer(std::size_t bytes) {
  void* p = nullptr;
  if (::posix_memalign(&p, page_bytes, bytes) != 0) throw SystemError("posix_memalign: out of memory");
  return Buffer(static_cast<std::byte*>(p));
}

// The expected first word of a 4 KiB block: which rank wrote it and where,
// so a block from another file or another offset is caught.
std::uint64_t block_stamp(int rank, std::uint64_t block) {
  return (static_cast<std::uint64_t>(rank + 1) << 40U) ^ (block * 0x9e3779b97f4a7c15ULL);
}

// The rest of every block: rank-dependent words, written once.
void fill_base(std::byte* data, std::size_t bytes, int rank) {
  auto* words = reinterpret_cast<std::uint64_t*>(data);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  for (std::size_t i = 0; i < bytes / 8; ++i) words[i] = (static_cast<std::uint64_t>(rank) << 32U) + i * 2654435761U;
}

void stamp(std::byte* data, std::size_t bytes, int rank, std::uint64_t first_block) {
  for (std::size_t off = 0; off < bytes; off += page_bytes) {
    const std::uint64_t s = block_stamp(rank, first_block + off / page_bytes);
    std::memcpy(data + off, &s, sizeof s);
  }
}

std::uint64_t wrong_blocks(const std::byte* got, const std::byte* base, std::size_t bytes, int rank,
                           std::uint64_t first_block) {
  std::uint64_t wrong = 0;
  for (std::size_t off = 0; off < bytes; off += page_bytes) {
    const std::size_t len = page_bytes;
    std::uint64_t s = 0;
    std::memcpy(&s, got + off, sizeof s);
    const bool ok = s == block_stamp(rank, first_block + off / page_bytes) &&
                    std::memcmp(got + off + sizeof s, base + off + sizeof s, len - sizeof s) == 0;
    if (!ok) ++wrong;
  }
  return wrong;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::uint64_t node_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long size = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(size) : 0;
}

// Writes the whole file and syncs it; seconds from `start`.
double write_file(const std::string& path, bool direct, std::uint64_t file_bytes, std::byte* block,
                  const std::byte* base, int rank, std::chrono::steady_clock::time_point start) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | (direct ? O_DIRECT : 0)));
  if (!fd.valid()) throw SystemError(fmt::format("open {}: {}", path, errno_text(errno)));
  for (std::uint64_t off = 0; off < file_bytes;) {
    const std::size_t len = static_cast<std::size_t>(std::min(io_block_bytes, file_bytes - off));
    std::memcpy(block, base, len);
    stamp(block, len, rank, off / page_bytes);
    Watchdog::note_step("storage write", static_cast<std::size_t>(file_bytes));
    const ssize_t n = ::pwrite(fd.get(), block, len, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw SystemError(fmt::format("write {}: {}", path, n < 0 ? errno_text(errno) : "no progress"));
    off += static_cast<std::uint64_t>(n);
  }
  if (::fsync(fd.get()) != 0) throw SystemError(fmt::format("fsync {}: {}", path, errno_text(errno)));
  const double seconds = seconds_since(start);
  // Buffered: drop the file's pages, so the reads come from the storage.
  if (!direct) (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  fd.close_checked(path);
  return seconds;
}

// Reads the whole file back and checks every block; seconds from `start`.
double read_file(const std::string& path, bool direct, std::uint64_t file_bytes, std::byte* block,
                 const std::byte* base, int rank, std::chrono::steady_clock::time_point start, std::uint64_t& wrong) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (direct ? O_DIRECT : 0)));
  if (!fd.valid()) throw SystemError(fmt::format("open {}: {}", path, errno_text(errno)));
  for (std::uint64_t off = 0; off < file_bytes;) {
    const std::size_t len = static_cast<std::size_t>(std::min(io_block_bytes, file_bytes - off));
    Watchdog::note_step("storage read", static_cast<std::size_t>(file_bytes));
    const ssize_t n = ::pread(fd.get(), block, len, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError(fmt::format("read {}: {}", path, errno_text(errno)));
    if (n == 0) {  // shorter than written: every missing block is wrong
      wrong += (file_bytes - off + page_bytes - 1) / page_bytes;
      break;
    }
    // Whole blocks only; a short read's tail is read again.
    const std::size_t full = static_cast<std::size_t>(n) - static_cast<std::size_t>(n) % page_bytes;
    if (full == 0) {
      wrong += (file_bytes - off + page_bytes - 1) / page_bytes;
      break;
    }
    wrong += wrong_blocks(block, base, full, rank, off / page_bytes);
    off += full;
  }
  return seconds_since(start);
}

// What each rank reports to rank 0, as its bytes.
struct StorageLine {
  int node = 0;
  int writer = 0;  // 1 when this rank wrote a file
  int removed = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t bytes_read = 0;
  double write_s = 0;
  double read_s = 0;
  std::uint64_t wrong = 0;
};

// Every rank learns the first problem any rank found (the lowest rank's),
// so all exit 2 together with the same line.
void agree_on_problem(const Comm& world, const std::string& mine) {
  const std::vector<std::string> all = world.allgather(mine);
  for (const std::string& p : all)
    if (!p.empty()) throw UsageError(p);
}

}  // namespace

std::string storage_path_problem(const std::string& dir) {
  if (dir.empty()) return "--storage-path: give a folder";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return fmt::format("--storage-path {}: {}", dir, errno == ENOENT ? "no such folder" : errno_text(errno));
  if (!S_ISDIR(st.st_mode)) return fmt::format("--storage-path {}: not a folder", dir);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return fmt::format("--storage-path {}: not writable: {}", dir, errno_text(errno));
  const NameLocks locks = name_locks(dir, true);
  if (locks.immutable)
    return fmt::format(
        "--storage-path {}: the folder is immutable (chattr +i), no file can be made there; clear the "
        "flag (chattr -i {}) or give another folder",
        dir, dir);
  if (locks.append_only)
    return fmt::format(
        "--storage-path {}: the folder is append-only (chattr +a), the test files could be made but "
        "never removed; clear the flag (chattr -a {}) or give another folder",
        dir, dir);
  TestFile probe;
  if (std::string why = probe.create(dir, "probe", 0); !why.empty()) return why;
  const std::string name = probe.path();
  if (!probe.remove() && errno != ENOENT)
    return fmt::format("--storage-path {}: a file made there cannot be removed ({}); {} is left, delete it by hand",
                       dir, errno_text(errno), name);
  return {};
}

std::uint64_t default_file_bytes(bool direct, std::uint64_t node_memory_bytes, int writers_on_node) {
  std::uint64_t bytes = gib;
  if (!direct && writers_on_node > 0)
    bytes = std::max(bytes, 2 * (node_memory_bytes / static_cast<std::uint64_t>(writers_on_node)));
  return (bytes + mib - 1) / mib * mib;
}

StorageResult run_storage(const RunConfig& config, const Comm& world, const Layout& layout,
                          const StorageEnded& on_end) {
  const StorageConfig& sc = config.storage;
  const bool writer = !sc.per_node || layout.local_rank == 0;
  const int writers_on_node = sc.per_node ? 1 : layout.ranks_per_node[static_cast<std::size_t>(layout.node)];

  // Every rank checks the folder as it sees it (on several nodes it must be
  // there on each); the writers create their file, so the check is the real
  // thing.
  const std::string& host = layout.hostnames[static_cast<std::size_t>(layout.node)];
  TestFile file;
  std::string problem = storage_path_problem(sc.path);
  if (problem.empty() && writer) problem = file.create(sc.path, host, layout.rank);
  agree_on_problem(world, problem);

  // Every rank learns every writer's file, so that any of them can remove
  // the file of one that was killed; from now on the cleanup covers them all.
  const std::vector<std::string> paths = world.allgather(file.path());
  const std::vector<FileId> ids = world.allgather_value(FileId{layout.node, writer ? 1 : 0, file.dev(), file.ino()});
  std::vector<RunFile> files;
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i].writer != 0) files.push_back({paths[i], ids[i]});
  // Own file first: the one this rank is surest to see.
  std::stable_partition(files.begin(), files.end(), [&](const RunFile& f) { return f.path == file.path(); });
  const std::string where = fmt::format("rank {} on {}", layout.rank, host);
  StorageResult known;
  known.path = sc.path;
  known.io_mode = sc.buffered ? "buffered" : "direct";
  known.io_note = sc.buffered ? "--storage-buffered" : "";
  known.per_node = sc.per_node;
  known.files_written = static_cast<int>(files.size());
  arm_cleanup(files, layout.node, where, known, on_end);

  // O_DIRECT only when every writer's file takes it (tmpfs, for one, refuses).
  std::int64_t buffered = sc.buffered ? 1 : 0;
  std::string note = sc.buffered ? "--storage-buffered" : "";
  if (writer && !sc.buffered) {
    const int fd = ::open(file.path().c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_DIRECT);
    if (fd < 0) {
      buffered = 1;
      note = fmt::format("the file system refuses O_DIRECT ({})", errno_text(errno));
    } else {
      ::close(fd);
    }
  }
  std::int64_t any_buffered = buffered;
  world.allreduce_max(std::span<std::int64_t>(&any_buffered, 1));
  const bool direct = any_buffered == 0;
  if (!direct && note.empty()) note = "another node's file system refuses O_DIRECT";
  const std::vector<std::string> notes = world.allgather(writer && buffered != 0 ? note : std::string());
  for (const std::string& n : notes)
    if (!n.empty()) {
      note = n;
      break;
    }

  // One size for every file: the given one, else the largest any node needs.
  std::int64_t file_bytes = static_cast<std::int64_t>(
      sc.file_bytes > 0 ? sc.file_bytes : default_file_bytes(direct, node_memory_bytes(), writers_on_node));
  world.allreduce_max(std::span<std::int64_t>(&file_bytes, 1));
  // Whole 4 KiB blocks: the check's unit, and O_DIRECT's alignment.
  const std::uint64_t bytes = (static_cast<std::uint64_t>(file_bytes) + page_bytes - 1) / page_bytes * page_bytes;
  known.io_mode = direct ? "direct" : "buffered";
  known.io_note = direct ? std::string() : note;
  known.file_bytes = bytes;
  known.block_bytes = std::min(io_block_bytes, bytes);
  arm_cleanup(files, layout.node, where, known, on_end);

  // Room for this node's files at least (a shared folder needs more; the
  // writes then fail with the system's reason).
  std::string room;
  if (writer && layout.local_rank == 0) {
    struct statvfs fs {};
    if (::statvfs(sc.path.c_str(), &fs) == 0) {
      const std::uint64_t free_bytes = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
      const std::uint64_t need = bytes * static_cast<std::uint64_t>(writers_on_node);
      if (need > free_bytes)
        room = fmt::format(
            "--storage-path {}: {} free, the {} file{} of {} on {} need {}; give a smaller "
            "--file-bytes",
            sc.path, format_size(free_bytes), writers_on_node, writers_on_node == 1 ? "" : "s", format_size(bytes),
            layout.hostnames[static_cast<std::size_t>(layout.node)], format_size(need));
    }
  }
  agree_on_problem(world, room);

  StorageLine mine;
  mine.node = layout.node;
  mine.writer = writer ? 1 : 0;
  const std::size_t block_len = static_cast<std::size_t>(std::min(io_block_bytes, bytes));
  const std::size_t alloc = (block_len + page_bytes - 1) / page_bytes * page_bytes;
  Buffer block = writer ? aligned_buffer(alloc) : Buffer();
  Buffer base = writer ? aligned_buffer(alloc) : Buffer();
  if (writer) fill_base(base.get(), alloc, layout.rank);

  Watchdog::note_phase("storage");
  world.barrier();
  auto start = std::chrono::steady_clock::now();
  if (writer) {
    mine.write_s = write_file(file.path(), direct, bytes, block.get(), base.get(), layout.rank, start);
    mine.bytes_written = bytes;
  }
  world.barrier();
  start = std::chrono::steady_clock::now();
  if (writer) {
    mine.read_s = read_file(file.path(), direct, bytes, block.get(), base.get(), layout.rank, start, mine.wrong);
    mine.bytes_read = bytes;
  }
  world.barrier();
  if (writer) mine.removed = file.remove() ? 1 : 0;
  Watchdog::set_cleanup({});

  const std::vector<StorageLine> lines = world.allgather_value(mine);
  StorageResult r;
  if (world.rank() != 0) return r;
  r.path = sc.path;
  r.io_mode = direct ? "direct" : "buffered";
  r.io_note = direct ? std::string() : note;
  r.file_bytes = bytes;
  r.block_bytes = block_len;
  r.per_node = sc.per_node;
  for (int n = 0; n < layout.nodes; ++n) {
    StorageNode row;
    row.node = n;
    row.host = layout.hostnames[static_cast<std::size_t>(n)];
    r.nodes.push_back(row);
  }
  for (const StorageLine& l : lines) {
    StorageNode& row = r.nodes[static_cast<std::size_t>(l.node)];
    if (l.writer == 0) continue;
    row.files += 1;
    row.bytes += l.bytes_written;
    row.write_s = std::max(row.write_s, l.write_s);
    row.read_s = std::max(row.read_s, l.read_s);
    r.files_written += 1;
    r.files_removed += l.removed;
    r.wrong_blocks += l.wrong;
  }
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].writer != 0 && lines[i].removed == 0) r.files_left.push_back(paths[i]);
  return r;
}

}  // namespace fabricbench
