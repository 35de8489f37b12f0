#pragma once
// Result files are written safely or not at all. The rules (README, "File
// safety"):
//  - a target must be a regular file or not exist yet: a device, a fifo, a
//    folder or a socket is refused before anything runs (exit 2), as is a
//    name the final rename could not replace (an immutable or append-only
//    file, a mount point, a folder that is immutable or append-only);
//  - two outputs on one file, or an output that is one of the inputs, are
//    refused (exit 2): one would silently replace the other;
//  - content goes to a fresh temporary in the target's folder, made with
//    mkstemp (O_CREAT|O_EXCL: never a name anyone can predict and plant a
//    symlink on) or an unnamed file (O_TMPFILE) named only for the rename,
//    written whole, synced, then renamed onto the target. A
//    symlink at the target is replaced, never written through; a failure
//    leaves the target as it was and removes the temporary.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace fabricbench {

// The kind of a file that is not a regular one, for a message: "a folder",
// "a fifo", "a character device", "a block device", "a socket".
const char* file_kind(mode_t mode);

// What the kernel refuses when a name is removed or renamed over: the
// inode's flags and whether something is mounted on it. Read without
// changing anything: statx's attributes where the file system reports them,
// else FS_IOC_GETFLAGS; a mount point by STATX_ATTR_MOUNT_ROOT, else by a
// device that differs from the folder's (which misses a bind mount from the
// same file system on kernels before 5.8).
struct NameLocks {
  bool immutable = false;    // chattr +i: no rename over it, no unlink
  bool append_only = false;  // chattr +a: the same; on a folder, its names can be added, never removed
  bool mount_point = false;  // a file or folder mounted on the name (mount --bind): rename fails with EBUSY
};

// The locks of the name `path` itself (a symlink is not followed unless
// `follow`: a link carries none); all false for a name that does not exist.
NameLocks name_locks(const std::string& path, bool follow = false);

// Throws UsageError "FLAG PATH: ..." when PATH cannot become a result file:
// empty, an existing file that is not regular (after symlinks), a name the
// final rename could not replace (name_locks of the name, or of its folder),
// or a folder that does not exist or in which no new file can be created
// (probed with a mkstemp file, removed at once). Each message says what to do.
void check_output_target(const std::string& path, const std::string& flag);

// An output named with its flag, e.g. {"--csv", "r.csv"}.
struct NamedOutput {
  std::string flag;
  std::string path;
};

// Throws UsageError when two outputs name one file (the same path, or links
// to one file) or an output is one of `inputs` (the same file on disk).
// Empty paths are ignored.
void check_distinct_outputs(const std::vector<NamedOutput>& outputs, const std::vector<std::string>& inputs);

// Writes what `produce` writes into an unnamed file in `path`'s folder
// (O_TMPFILE; else a mkstemp temporary beside it), syncs it, gives it the
// target's mode (a new file: 0666 less the umask), and renames it onto
// `path`. Throws SystemError naming the file when any step fails or when
// `path` has meanwhile become something other than a regular file; `path`
// is then unchanged and the temporary gone. Returns false, with nothing
// written, when a newer save superseded the content (supersede_writes)
// before its rename.
bool write_file_safely(const std::string& path, const std::function<void(std::ostream&)>& produce);

// Another thread has just taken newer content than any write in flight
// (the lead's save as the launcher ends the job, with the reason): the
// writes whose content was taken before now are dropped at their rename and
// their temporaries removed, so none of them replaces the newer save. Call
// it before writing the newer content.
void supersede_writes() noexcept;

// While one lives, the calling thread's writes count from its creation
// rather than from their own start: make one before reading the state the
// content is made from, so a supersede_writes() that comes after that read
// drops them. Without one, a write counts from its start.
class ContentSnapshot {
 public:
  ContentSnapshot();
  ~ContentSnapshot();
  ContentSnapshot(const ContentSnapshot&) = delete;
  ContentSnapshot& operator=(const ContentSnapshot&) = delete;

 private:
  std::optional<std::uint64_t> before_;
};

// The run is ending (the watchdog, on a signal or a deadline, from its own
// thread): from now on only the calling thread's writes land. Another
// thread's write that reaches its rename is dropped and that thread waits
// for the process to end, so the last words saved are never replaced by an
// older result; the temporaries other threads are writing are removed at
// once, so a kill during the last words leaves none of theirs.
void begin_final_writes() noexcept;

// While one lives, the calling thread's writes are not synced to disk: a
// save that races the launcher's SIGKILL (the lead's save on Open MPI's
// SIGCONT: its SIGTERM comes a second later and the SIGKILL may follow that
// within milliseconds). The rename still makes the file whole for
// every reader; only a power loss in the next seconds could lose it.
class UnsyncedWrites {
 public:
  UnsyncedWrites() noexcept;
  ~UnsyncedWrites();
  UnsyncedWrites(const UnsyncedWrites&) = delete;
  UnsyncedWrites& operator=(const UnsyncedWrites&) = delete;

 private:
  bool before_;
};

// Removes every temporary still being written; called just before the
// process ends without unwinding (std::_Exit), so none is left behind.
void remove_unfinished_temporaries() noexcept;

}  // namespace fabricbench
