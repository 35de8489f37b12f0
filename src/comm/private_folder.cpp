#include "private_folder.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"
#include "fabricbench/core/fd.hpp"

namespace fabricbench {

void prepare_private_folder(const std::string& dir) {
  const auto refuse = [&dir](const std::string& why) {
    throw UsageError(fmt::format("FABRICBENCH_BOOTSTRAP {}: {}", dir, why));
  };
  if (const std::filesystem::path parent = std::filesystem::path(dir).parent_path(); !parent.empty()) {
    std::error_code ignored;
    std::filesystem::create_directories(parent, ignored);
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    refuse(fmt::format("cannot create the folder: {}", std::strerror(errno)));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) refuse(fmt::format("cannot read the folder: {}", std::strerror(errno)));
  if (S_ISLNK(st.st_mode)) refuse("is a symlink; give the folder itself");
  if (!S_ISDIR(st.st_mode)) refuse("is not a folder");
  if (st.st_uid != ::geteuid())
    refuse(fmt::format("is owned by user {}, not by this user ({}); use a private folder (mkdir -m 700)", st.st_uid,
                       ::geteuid()));
  if ((st.st_mode & 022) != 0)
    refuse(fmt::format("is writable by {} (mode {:04o}); use a private folder (mkdir -m 700)",
                       (st.st_mode & 002) != 0 ? "everyone" : "its group", st.st_mode & 07777));
}

void write_private_file(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::string temp = dir + "/.tmp.XXXXXX";
  const Fd fd(::mkostemp(temp.data(), O_CLOEXEC));
  if (!fd.valid()) throw SystemError(fmt::format("cannot create a file in {}: {}", dir, std::strerror(errno)));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::unlink(temp.c_str());
      throw SystemError(fmt::format("cannot write {}/{}: {}", dir, name, std::strerror(err)));
    }
    done += static_cast<std::size_t>(n);
  }
  const std::string target = dir + "/" + name;
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw SystemError(fmt::format("cannot write {}: {}", target, std::strerror(err)));
  }
}

std::optional<std::string> read_private_file(const std::string& path) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ELOOP) throw SystemError(fmt::format("{}: is a symlink, planted by someone; not read", path));
    throw SystemError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw SystemError(fmt::format("{}: not a regular file; not read", path));
  if (static_cast<std::size_t>(st.st_size) > max_exchange_bytes)
    throw SystemError(fmt::format("{}: {} bytes, more than an exchange may hold", path, st.st_size));
  std::string out(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd.get(), out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return out;
}

}  // namespace fabricbench
