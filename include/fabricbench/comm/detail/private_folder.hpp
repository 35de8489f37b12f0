#pragma once
// The meeting folder of processes started without a launcher
// (FABRICBENCH_BOOTSTRAP): every rank reads what the others write there, so
// it must be out of reach of other users.
//  - created 0700; an existing one must be a real folder (not a symlink, also
//    not one named with a trailing "/") owned by this user and writable by
//    nobody else, or it is refused;
//  - the check is made on an open descriptor (O_DIRECTORY|O_NOFOLLOW, then
//    fstat), and every later operation is relative to that descriptor
//    (openat, renameat, unlinkat, mkdirat): a folder swapped under the path
//    afterwards is never used;
//  - files are written through a fresh temporary (O_CREAT|O_EXCL, 0600)
//    renamed into place, so a planted symlink is replaced, never written
//    through; they are read with O_NOFOLLOW, and a symlink is refused;
//  - what is read is bounded in size; its fields are validated by the reader.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fabricbench/core/fd.hpp"

namespace fabricbench {

// The most one exchange file may hold (a node's topology is a few KiB).
inline constexpr std::size_t max_exchange_bytes = std::size_t{64} << 20;

class PrivateFolder {
 public:
  // Creates `path` (0700, parents as needed) or checks an existing one, and
  // holds it open. Throws UsageError "FABRICBENCH_BOOTSTRAP PATH: ..." naming
  // what is wrong.
  static PrivateFolder prepare(const std::string& path);

  // The subfolder `name`, held open and checked like prepare()'s; nullopt
  // when it does not exist. Throws SystemError when it is not private.
  [[nodiscard]] std::optional<PrivateFolder> open_folder(const std::string& name) const;
  // A new subfolder `prefix` + random letters (0700), held open; its name is
  // the returned folder's name().
  [[nodiscard]] PrivateFolder make_folder(std::string_view prefix) const;

  // Writes `bytes` to `name` through a fresh temporary and a rename. When
  // `lock` is given, the temporary is flock()ed exclusively before the
  // rename and its descriptor, holding the lock, is moved into *lock: the
  // file is locked from the moment it can be seen. Throws SystemError.
  void write(const std::string& name, const std::string& bytes, Fd* lock = nullptr) const;
  // Creates `name` (0600) only when it does not exist; false when it does.
  // Throws SystemError on any other failure.
  [[nodiscard]] bool create_new(const std::string& name) const;
  // Opens `name` read-write, never through a symlink; created 0600 when
  // absent and `create`. An invalid Fd when it does not exist (and not
  // `create`) or the folder itself has been removed. Throws SystemError.
  [[nodiscard]] Fd open_rw(const std::string& name, bool create) const;
  // Whether the folder held open has been removed (its path may since name
  // another one).
  [[nodiscard]] bool removed() const;
  // `name` opened read-only (O_NOFOLLOW), or an invalid Fd when it does not
  // exist. Throws SystemError when it is a symlink or unreadable.
  [[nodiscard]] Fd open_file(const std::string& name) const;

  // The content of `name`, or nullopt when it does not exist (yet). Throws
  // SystemError when it is a symlink, not a regular file, larger than
  // max_exchange_bytes or unreadable.
  [[nodiscard]] std::optional<std::string> read(const std::string& name) const;
  [[nodiscard]] bool exists(const std::string& name) const;
  // Whether `path` still names this folder (not one swapped in since).
  [[nodiscard]] bool named_by(const std::string& path) const;
  // Whether `name` is the file open as `fd` (the same inode).
  [[nodiscard]] bool is_file(const std::string& name, const Fd& fd) const;
  // Removes the file `name`; a missing one is no error.
  void remove(const std::string& name) const noexcept;
  // Removes the subfolder `name` when it is empty; false when it is not.
  bool remove_folder_if_empty(const std::string& name) const noexcept;
  // The names in the folder, without "." and "..".
  [[nodiscard]] std::vector<std::string> entries() const;

  // The path as given (for messages) and the last component of it.
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string name() const;
  [[nodiscard]] int fd() const { return fd_.get(); }

 private:
  PrivateFolder(Fd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}

  Fd fd_;
  std::string path_;
};

// Reads the whole regular file open as `fd` (bounded by
// max_exchange_bytes); `what` names it in errors. Throws SystemError.
std::string read_whole(const Fd& fd, const std::string& what);

// `path` without trailing "/" and "/." (a trailing slash makes the kernel
// follow a symlink that O_NOFOLLOW would refuse); "/" stays "/".
std::string without_trailing_slashes(std::string path);

}  // namespace fabricbench
