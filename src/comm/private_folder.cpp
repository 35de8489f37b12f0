#include "fabricbench/comm/detail/private_folder.hpp"

#include <cerrno>
#include <filesystem>
#include <random>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"

namespace fabricbench {
namespace {

std::string random_letters(std::size_t n) {
  static constexpr std::string_view letters = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device device;  // getrandom(): names that another run cannot predict or repeat
  std::uniform_int_distribution<std::size_t> pick(0, letters.size() - 1);
  std::string out(n, 'a');
  for (char& c : out) c = letters[pick(device)];
  return out;
}

// An empty string when `st` (of a folder opened with O_NOFOLLOW) is private.
std::string privacy_problem(const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) return "is not a folder";
  if (st.st_uid != ::geteuid())
    return fmt::format("is owned by user {}, not by this user ({}); use a private folder (mkdir -m 700)", st.st_uid,
                       ::geteuid());
  if ((st.st_mode & 022) != 0)
    return fmt::format("is writable by {} (mode {:04o}); use a private folder (mkdir -m 700)",
                       (st.st_mode & 002) != 0 ? "everyone" : "its group", st.st_mode & 07777);
  return "";
}

}  // namespace

std::string without_trailing_slashes(std::string path) {
  for (;;) {
    if (path.size() > 1 && path.back() == '/') {
      path.pop_back();
    } else if (path.size() > 2 && path.compare(path.size() - 2, 2, "/.") == 0) {
      path.resize(path.size() - 2);
    } else {
      break;
    }
  }
  return path;
}

PrivateFolder PrivateFolder::prepare(const std::string& path) {
  const auto refuse = [&path](const std::string& why) {
    throw UsageError(fmt::format("FABRICBENCH_BOOTSTRAP {}: {}", path, why));
  };
  // "link/" would resolve the symlink before O_NOFOLLOW sees the last name.
  const std::string dir = without_trailing_slashes(path);
  if (const std::filesystem::path parent = std::filesystem::path(dir).parent_path(); !parent.empty()) {
    std::error_code ignored;
    std::filesystem::create_directories(parent, ignored);
  }
  Fd fd;
  for (int attempt = 0;; ++attempt) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      refuse(fmt::format("cannot create the folder: {}", errno_text(errno)));
    fd = Fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    // Another group's last rank removes the folder as it leaves, and may do
    // so between the two calls: the folder is then made again.
    if (fd.valid() || errno != ENOENT || attempt >= 100) break;
  }
  if (!fd.valid()) {
    if (errno == ELOOP || errno == ENOTDIR) {  // O_DIRECTORY answers a symlink with ENOTDIR
      struct stat st {};
      refuse(::lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode) ? "is a symlink; give the folder itself"
                                                                   : "is not a folder");
    }
    refuse(fmt::format("cannot open the folder: {}", errno_text(errno)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) refuse(fmt::format("cannot read the folder: {}", errno_text(errno)));
  if (const std::string problem = privacy_problem(st); !problem.empty()) refuse(problem);
  return {std::move(fd), path};
}

std::optional<PrivateFolder> PrivateFolder::open_folder(const std::string& name) const {
  const std::string where = path_ + "/" + name;
  Fd fd(::openat(fd_.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::nullopt;
    throw SystemError(fmt::format("{}: cannot open the folder: {}", where, errno_text(errno)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw SystemError(fmt::format("{}: {}", where, errno_text(errno)));
  if (const std::string problem = privacy_problem(st); !problem.empty())
    throw SystemError(fmt::format("{}: {}", where, problem));
  return PrivateFolder(std::move(fd), where);
}

PrivateFolder PrivateFolder::make_folder(std::string_view prefix) const {
  for (int attempt = 0;; ++attempt) {
    const std::string name = fmt::format("{}{}", prefix, random_letters(12));
    if (::mkdirat(fd_.get(), name.c_str(), 0700) == 0) return *open_folder(name);
    if (errno != EEXIST || attempt > 100)
      throw SystemError(fmt::format("cannot create a folder in {}: {}", path_, errno_text(errno)));
  }
}

void PrivateFolder::write(const std::string& name, const std::string& bytes, Fd* lock) const {
  std::string temp;
  Fd fd;
  for (int attempt = 0; !fd.valid(); ++attempt) {
    temp = ".tmp." + random_letters(12);
    fd = Fd(::openat(fd_.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid() && (errno != EEXIST || attempt > 100))
      throw SystemError(fmt::format("cannot create a file in {}: {}", path_, errno_text(errno)));
  }
  const auto give_up = [&](const std::string& what) {
    const int err = errno;
    ::unlinkat(fd_.get(), temp.c_str(), 0);
    throw SystemError(fmt::format("cannot {} {}/{}: {}", what, path_, name, errno_text(err)));
  };
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) give_up("write");
    done += static_cast<std::size_t>(n);
  }
  if (lock != nullptr && ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) give_up("lock");
  if (::renameat(fd_.get(), temp.c_str(), fd_.get(), name.c_str()) != 0) give_up("write");
  if (lock != nullptr) *lock = std::move(fd);
}

bool PrivateFolder::create_new(const std::string& name) const {
  const Fd fd(::openat(fd_.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.valid()) return true;
  if (errno == EEXIST) return false;
  throw SystemError(fmt::format("cannot create {}/{}: {}", path_, name, errno_text(errno)));
}

Fd PrivateFolder::open_rw(const std::string& name, bool create) const {
  Fd fd(::openat(fd_.get(), name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0), 0600));
  if (!fd.valid()) {
    if (errno == ENOENT) return fd;
    if (errno == ELOOP)
      throw SystemError(fmt::format("{}/{}: is a symlink, planted by someone; not used", path_, name));
    throw SystemError(fmt::format("cannot open {}/{}: {}", path_, name, errno_text(errno)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw SystemError(fmt::format("{}/{}: not a regular file; not used", path_, name));
  return fd;
}

Fd PrivateFolder::open_file(const std::string& name) const {
  Fd fd(::openat(fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT) return fd;
    if (errno == ELOOP)
      throw SystemError(fmt::format("{}/{}: is a symlink, planted by someone; not read", path_, name));
    throw SystemError(fmt::format("cannot read {}/{}: {}", path_, name, errno_text(errno)));
  }
  return fd;
}

std::string read_whole(const Fd& fd, const std::string& what) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw SystemError(fmt::format("{}: not a regular file; not read", what));
  if (static_cast<std::size_t>(st.st_size) > max_exchange_bytes)
    throw SystemError(fmt::format("{}: {} bytes, more than an exchange may hold", what, st.st_size));
  std::string out(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd.get(), out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError(fmt::format("cannot read {}: {}", what, errno_text(errno)));
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return out;
}

std::optional<std::string> PrivateFolder::read(const std::string& name) const {
  const Fd fd = open_file(name);
  if (!fd.valid()) return std::nullopt;
  return read_whole(fd, path_ + "/" + name);
}

bool PrivateFolder::exists(const std::string& name) const {
  struct stat st {};
  return ::fstatat(fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

bool PrivateFolder::removed() const {
  struct stat st {};
  return ::fstat(fd_.get(), &st) != 0 || st.st_nlink == 0;
}

bool PrivateFolder::named_by(const std::string& path) const {
  struct stat named {};
  struct stat open {};
  return ::lstat(path.c_str(), &named) == 0 && ::fstat(fd_.get(), &open) == 0 && named.st_dev == open.st_dev &&
         named.st_ino == open.st_ino;
}

bool PrivateFolder::is_file(const std::string& name, const Fd& fd) const {
  struct stat named {};
  struct stat open {};
  return ::fstatat(fd_.get(), name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 && ::fstat(fd.get(), &open) == 0 &&
         named.st_dev == open.st_dev && named.st_ino == open.st_ino;
}

void PrivateFolder::remove(const std::string& name) const noexcept { ::unlinkat(fd_.get(), name.c_str(), 0); }

bool PrivateFolder::remove_folder_if_empty(const std::string& name) const noexcept {
  return ::unlinkat(fd_.get(), name.c_str(), AT_REMOVEDIR) == 0;
}

std::vector<std::string> PrivateFolder::entries() const {
  std::vector<std::string> out;
  // fdopendir takes the descriptor it is given: read a duplicate.
  const int copy = ::openat(fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) return out;
  DIR* d = ::fdopendir(copy);
  if (d == nullptr) {
    ::close(copy);
    return out;
  }
  while (const dirent* e = ::readdir(d)) {  // NOLINT(concurrency-mt-unsafe): a stream of its own
    const std::string_view n(e->d_name);
    if (n != "." && n != "..") out.emplace_back(n);
  }
  ::closedir(d);
  return out;
}

std::string PrivateFolder::name() const { return std::filesystem::path(path_).filename().string(); }

}  // namespace fabricbench
