#include "fabricbench/core/safe_file.hpp"

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"

namespace fabricbench {
namespace {

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The target as it is now (following symlinks): nullopt when it does not
// exist, else its stat.
std::optional<struct stat> stat_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

// A named temporary and its descriptor (make_temporary).
struct Temporary {
  std::string name;
  int fd = -1;
};

// The temporaries being written now, whether the run is ending (the
// watchdog's thread writing the last words, then ending the process: a
// write another thread finishes after that would replace the last words
// with an older result, so it is dropped instead), and how many times a
// newer save has superseded the writes begun before it (supersede_writes).
struct Unfinished {
  std::mutex mutex;
  std::set<std::string> names;
  bool ending = false;
  std::thread::id ender;
  std::uint64_t epoch = 0;
};

Unfinished& unfinished() {
  static Unfinished u;
  return u;
}

// Removes every named temporary being written (u.mutex held): an open
// descriptor outlives its name.
void remove_temporaries(Unfinished& u) {
  for (const std::string& name : u.names) ::unlink(name.c_str());
  u.names.clear();
}

// The epoch this thread's content was taken in, while a ContentSnapshot
// lives; without one a write counts from its own start.
thread_local std::optional<std::uint64_t> snapshot_epoch;

std::uint64_t content_epoch() {
  if (snapshot_epoch) return *snapshot_epoch;
  Unfinished& u = unfinished();
  const std::lock_guard lock(u.mutex);
  return u.epoch;
}

// When the run is ending on another thread (`lock` holds u.mutex), this
// thread's write would be dropped, and whatever it made from now on could
// outlive the removal of the unfinished ones: it waits for the process to end.
void wait_if_another_thread_ends(std::unique_lock<std::mutex>& lock) {
  const Unfinished& u = unfinished();
  if (!u.ending || u.ender == std::this_thread::get_id()) return;
  lock.unlock();
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

// A temporary's name beside `path` but for its 7-byte ending (".XXXXXX"):
// "<folder>/.<name>", the name shortened so that the whole fits 255 bytes
// (NAME_MAX) whatever the target's length.
std::string temporary_stem(const std::string& path) {
  constexpr std::size_t name_max = 255;
  constexpr std::size_t added = 8;  // the dot in front and the 7-byte ending
  std::string base = base_of(path);
  if (base.size() > name_max - added) base.resize(name_max - added);
  return fmt::format("{}/.{}", folder_of(path), base);
}

// A fresh temporary beside `path`: mkstemp opens it O_CREAT|O_EXCL with mode
// 0600, so neither a planted file nor a planted symlink is ever opened.
Temporary make_temporary(const std::string& path) {
  std::string name = temporary_stem(path) + ".XXXXXX";
  Unfinished& u = unfinished();
  std::unique_lock lock(u.mutex);
  wait_if_another_thread_ends(lock);
  const int fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd >= 0) u.names.insert(name);
  return {fd < 0 ? std::string() : name, fd};
}

thread_local bool unsynced_thread = false;  // while an UnsyncedWrites lives

// The last words: written by the thread that ends the run, which the
// launcher may kill milliseconds after its SIGTERM (Open MPI: SIGCONT,
// SIGTERM a second later, then SIGKILL; seen 10 to 40 ms after the SIGTERM).
// They are not synced to disk, which can take longer on a busy machine; the rename
// still makes them whole for every reader, and only a power loss in the
// next seconds could lose them. A thread holding UnsyncedWrites writes so too.
bool writing_last_words() {
  if (unsynced_thread) return true;
  Unfinished& u = unfinished();
  const std::lock_guard lock(u.mutex);
  return u.ending && u.ender == std::this_thread::get_id();
}

void forget_temporary(const std::string& name) {
  Unfinished& u = unfinished();
  const std::lock_guard lock(u.mutex);
  u.names.erase(name);
}

// What becomes of a write whose content was taken in epoch `taken` as it
// reaches its rename (`lock` holds u.mutex): it waits for the process to end
// when the run is ending on another thread; false when a newer save has
// superseded it (it is dropped); true when it lands.
bool may_land(std::unique_lock<std::mutex>& lock, std::uint64_t taken) {
  wait_if_another_thread_ends(lock);
  return taken >= unfinished().epoch;
}

// Renames the temporary onto `path`: 0, or the errno, or -1 when a newer
// save superseded its content (the temporary is then removed). When the run
// is ending on another thread, the temporary is removed and this thread
// waits for the process to end.
int commit_temporary(const Temporary& temp, const std::string& path, std::uint64_t taken) {
  Unfinished& u = unfinished();
  std::unique_lock lock(u.mutex);
  u.names.erase(temp.name);
  const bool ends_elsewhere = u.ending && u.ender != std::this_thread::get_id();
  if (ends_elsewhere || taken < u.epoch) ::unlink(temp.name.c_str());
  if (!may_land(lock, taken)) return -1;
  return ::rename(temp.name.c_str(), path.c_str()) == 0 ? 0 : errno;
}

mode_t process_umask() {
  // umask() can only be read by setting it, which races with other threads;
  // the kernel shows it in /proc/self/status.
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
  }
  return 022;
}

bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

#ifdef STATX_ATTR_MOUNT_ROOT
constexpr std::uint64_t statx_mount_root = STATX_ATTR_MOUNT_ROOT;
#else
constexpr std::uint64_t statx_mount_root = 0x2000;  // Linux 5.8's value, for older headers
#endif

// FS_IOC_GETFLAGS's immutable and append-only bits, or nullopt when they
// cannot be read (no such name, not openable, a file system without flags).
// Opened read-only and non-blocking, so nothing changes and nothing waits.
std::optional<unsigned> inode_flags(const std::string& path, bool follow) {
  const int fd = ::open(path.c_str(),  // NOLINT(cppcoreguidelines-pro-type-vararg)
                        O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
  if (fd < 0) return std::nullopt;
  int flags = 0;
  const bool got = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;  // NOLINT(cppcoreguidelines-pro-type-vararg)
  ::close(fd);
  if (!got) return std::nullopt;
  return static_cast<unsigned>(flags) & (FS_IMMUTABLE_FL | FS_APPEND_FL);
}

// "is immutable (chattr +i), so ..." for a result target, or empty.
std::string target_lock_problem(const std::string& path) {
  const NameLocks locks = name_locks(path);
  const char* rename_fails = "so the finished result cannot be renamed over it";
  if (locks.immutable)
    return fmt::format("is immutable (chattr +i), {}; clear the flag (chattr -i {}) or give another file", rename_fails,
                       path);
  if (locks.append_only)
    return fmt::format("is append-only (chattr +a), {}; clear the flag (chattr -a {}) or give another file",
                       rename_fails, path);
  if (locks.mount_point)
    return fmt::format(
        "is a mount point (something is mounted on it, e.g. mount --bind), {}; unmount it (umount {}) or "
        "give another file",
        rename_fails, path);
  const std::string folder = folder_of(path);
  const NameLocks in = name_locks(folder, true);
  if (in.immutable || in.append_only)
    return fmt::format(
        "its folder {} is {}, so no result can be renamed into it; clear the flag (chattr -{} {}) or write elsewhere",
        folder, in.immutable ? "immutable (chattr +i)" : "append-only (chattr +a)", in.immutable ? 'i' : 'a', folder);
  return {};
}

}  // namespace

NameLocks name_locks(const std::string& path, bool follow) {
  NameLocks locks;
  struct statx sx {};
  const int at = (follow ? 0 : AT_SYMLINK_NOFOLLOW) | AT_NO_AUTOMOUNT;
  const bool have_statx = ::statx(AT_FDCWD, path.c_str(), at, STATX_TYPE | STATX_INO, &sx) == 0;
  struct stat st {};
  if (!have_statx && (follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0) return locks;
  const mode_t mode = have_statx ? sx.stx_mode : st.st_mode;
  if (S_ISLNK(mode)) return locks;  // a link has no flags and nothing mounted on it
  constexpr std::uint64_t flag_bits = STATX_ATTR_IMMUTABLE | STATX_ATTR_APPEND;
  if (have_statx && (sx.stx_attributes_mask & flag_bits) == flag_bits) {
    locks.immutable = (sx.stx_attributes & STATX_ATTR_IMMUTABLE) != 0;
    locks.append_only = (sx.stx_attributes & STATX_ATTR_APPEND) != 0;
  } else if (S_ISREG(mode) || S_ISDIR(mode)) {
    const std::optional<unsigned> flags = inode_flags(path, follow);
    locks.immutable = flags && (*flags & FS_IMMUTABLE_FL) != 0;
    locks.append_only = flags && (*flags & FS_APPEND_FL) != 0;
  }
  if (have_statx && (sx.stx_attributes_mask & statx_mount_root) != 0) {
    locks.mount_point = (sx.stx_attributes & statx_mount_root) != 0;
  } else {
    struct stat self {};
    struct stat parent {};
    if (::stat(path.c_str(), &self) == 0 && ::stat(folder_of(path).c_str(), &parent) == 0)
      locks.mount_point = self.st_dev != parent.st_dev;
  }
  return locks;
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

UnsyncedWrites::UnsyncedWrites() noexcept : before_(unsynced_thread) { unsynced_thread = true; }
UnsyncedWrites::~UnsyncedWrites() { unsynced_thread = before_; }

void begin_final_writes() noexcept {
  Unfinished& u = unfinished();
  const std::lock_guard lock(u.mutex);
  u.ending = true;
  u.ender = std::this_thread::get_id();
  // The other threads' writes will be dropped at their rename: their
  // temporaries go now, not after the last words, which the launcher's
  // SIGKILL may cut short on a loaded machine (a write stuck in a slow
  // fsync would otherwise stay behind). An open descriptor outlives the name.
  remove_temporaries(u);
}

void remove_unfinished_temporaries() noexcept {
  Unfinished& u = unfinished();
  const std::lock_guard lock(u.mutex);
  remove_temporaries(u);
}

void supersede_writes() noexcept {
  Unfinished& u = unfinished();
  const std::lock_guard lock(u.mutex);
  ++u.epoch;
  // Their temporaries go now, as the end's do: the writer may be stuck in a
  // slow fsync when the launcher's SIGKILL comes.
  remove_temporaries(u);
}

ContentSnapshot::ContentSnapshot() : before_(snapshot_epoch) {
  Unfinished& u = unfinished();
  const std::lock_guard lock(u.mutex);
  snapshot_epoch = u.epoch;
}
ContentSnapshot::~ContentSnapshot() { snapshot_epoch = before_; }

void check_output_target(const std::string& path, const std::string& flag) {
  if (path.empty()) throw UsageError(fmt::format("{}: empty file name", flag));
  if (const auto st = stat_of(path); st && !S_ISREG(st->st_mode))
    throw UsageError(fmt::format("{} {}: is {}, not a regular file; results go only to regular files", flag, path,
                                 file_kind(st->st_mode)));
  // The result is renamed onto the name at the end: what would make that
  // fail (exit 4, after the measuring) is refused now. Never by trying the
  // rename itself, which would replace the user's file.
  if (const std::string why = target_lock_problem(path); !why.empty())
    throw UsageError(fmt::format("{} {}: {}", flag, path, why));
  const Temporary probe = make_temporary(path);
  if (probe.fd < 0) throw UsageError(fmt::format("{} {}: cannot write there: {}", flag, path, std::strerror(errno)));
  ::close(probe.fd);
  const bool removed = ::unlink(probe.name.c_str()) == 0;
  const int err = errno;
  forget_temporary(probe.name);
  if (!removed)
    throw UsageError(fmt::format("{} {}: a file made there cannot be removed ({}): {} is left; delete it by hand", flag,
                                 path, std::strerror(err), probe.name));
}

void check_distinct_outputs(const std::vector<NamedOutput>& outputs, const std::vector<std::string>& inputs) {
  const auto same = [](const std::string& a, const std::string& b) {
    const auto sa = stat_of(a);
    const auto sb = stat_of(b);
    if (sa && sb) return sa->st_dev == sb->st_dev && sa->st_ino == sb->st_ino;
    if (sa || sb) return false;
    // Neither exists yet: the same name in the same folder.
    const auto fa = stat_of(folder_of(a));
    const auto fb = stat_of(folder_of(b));
    return base_of(a) == base_of(b) && fa && fb && fa->st_dev == fb->st_dev && fa->st_ino == fb->st_ino;
  };
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const NamedOutput& o = outputs[i];
    if (o.path.empty()) continue;
    for (const std::string& input : inputs) {
      if (same(o.path, input))
        throw UsageError(
            fmt::format("{} {}: is an input of this report; writing it would replace what is read", o.flag, o.path));
    }
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      const NamedOutput& other = outputs[j];
      if (!other.path.empty() && same(o.path, other.path))
        throw UsageError(fmt::format("{} {} and {} {}: one file for two outputs; give each its own file", o.flag,
                                     o.path, other.flag, other.path));
    }
  }
}

namespace {

// How a write ended.
enum class Written {
  replaced,    // the target holds the content
  superseded,  // a newer save came first: nothing was written
  no_unnamed,  // (write_unnamed) no unnamed file here: nothing was made
};

// The result written to an unnamed file in the target's folder (O_TMPFILE),
// named only for the rename: a process killed while it writes or syncs
// (the launcher's SIGKILL on a loaded machine, seconds into a slow fsync)
// leaves nothing behind, where a named temporary stayed. The name is given
// and renamed at once, in two system calls side by side (the name made
// first, the descriptor closed after): a kill between them is the only one
// that leaves a file. Written::no_unnamed, with nothing made, where the file
// system or the kernel has no unnamed files or /proc cannot name one; the
// caller then writes through a named temporary.
Written write_unnamed(const std::string& path, const std::string& text, mode_t mode, std::uint64_t taken) {
  Unfinished& u = unfinished();
  {
    std::unique_lock lock(u.mutex);
    wait_if_another_thread_ends(lock);
  }
  const int fd = ::open(folder_of(path).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);  // NOLINT(*-vararg)
  if (fd < 0) return Written::no_unnamed;
  const bool written = write_all(fd, text) && ::fchmod(fd, mode) == 0 && (writing_last_words() || ::fsync(fd) == 0);
  const int write_errno = errno;
  if (!written) {
    ::close(fd);
    throw SystemError(fmt::format("cannot write {}: {}", path, std::strerror(write_errno)));
  }
  const std::string proc = fmt::format("/proc/self/fd/{}", fd);
  const std::string stem = temporary_stem(path);
  std::random_device random;
  const auto fresh_name = [&] { return fmt::format("{}.{:06x}", stem, random() & 0xffffffU); };
  std::string name = fresh_name();
  // Named and renamed under the lock: the run's end (begin_final_writes) and
  // a newer save (supersede_writes) come before the name or after the
  // rename, never between.
  std::unique_lock lock(u.mutex);
  if (!may_land(lock, taken)) {
    ::close(fd);
    return Written::superseded;
  }
  int err = EEXIST;
  for (int attempt = 0; attempt < 100 && err == EEXIST; ++attempt) {
    if (attempt > 0) name = fresh_name();
    err = ::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0 ? 0 : errno;
  }
  if (err != 0) {
    ::close(fd);
    return Written::no_unnamed;  // no name could be given: nothing was made
  }
  const int renamed = ::rename(name.c_str(), path.c_str()) == 0 ? 0 : errno;
  ::close(fd);
  if (renamed != 0) {
    ::unlink(name.c_str());
    throw SystemError(fmt::format("cannot rename {} to {}: {}", name, path, std::strerror(renamed)));
  }
  return Written::replaced;
}

}  // namespace

bool write_file_safely(const std::string& path, const std::function<void(std::ostream&)>& produce) {
  // Counted from before the content is made: a newer save that comes while
  // it is made or written drops it.
  const std::uint64_t taken = content_epoch();
  std::ostringstream content;
  produce(content);
  // Taken out of the stream before the temporary exists: running out of
  // memory here leaves nothing behind.
  const std::string text = std::move(content).str();
  const std::optional<struct stat> target = stat_of(path);
  if (target && !S_ISREG(target->st_mode))
    throw SystemError(fmt::format("{}: is {}, not a regular file; not replaced", path, file_kind(target->st_mode)));
  const mode_t mode = target ? (target->st_mode & 0777) : (0666 & ~process_umask());
  if (const Written w = write_unnamed(path, text, mode, taken); w != Written::no_unnamed) return w == Written::replaced;
  const Temporary temp = make_temporary(path);
  if (temp.fd < 0)
    throw SystemError(fmt::format("cannot create a temporary file for {}: {}", path, std::strerror(errno)));
  const bool written =
      write_all(temp.fd, text) && ::fchmod(temp.fd, mode) == 0 && (writing_last_words() || ::fsync(temp.fd) == 0);
  const int write_errno = errno;
  if (::close(temp.fd) != 0 || !written) {
    const int err = written ? errno : write_errno;
    ::unlink(temp.name.c_str());
    forget_temporary(temp.name);
    throw SystemError(fmt::format("cannot write {}: {}", path, std::strerror(err)));
  }
  const int err = commit_temporary(temp, path, taken);
  if (err == -1) return false;
  if (err != 0) {
    ::unlink(temp.name.c_str());
    throw SystemError(fmt::format("cannot rename {} to {}: {}", temp.name, path, std::strerror(err)));
  }
  return true;
}

}  // namespace fabricbench
