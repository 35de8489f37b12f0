#include "fabricbench/topology/detail/sysfs_files.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fabricbench/core/error.hpp"
#include "fabricbench/core/fd.hpp"

namespace fabricbench::detail {
namespace fs = std::filesystem;

FileText read_small_file(const fs::path& path, std::size_t limit, Overflow overflow) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return {std::nullopt, errno_text(errno)};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return {std::nullopt, errno_text(errno)};
  if (S_ISDIR(st.st_mode)) return {std::nullopt, errno_text(EISDIR)};
  if (!S_ISREG(st.st_mode)) return {std::nullopt, "not a regular file"};
  std::string out;
  char buffer[4096];
  // One byte past the limit tells a file of exactly `limit` bytes from a
  // longer one.
  const std::size_t want = overflow == Overflow::refuse ? limit + 1 : limit;
  while (out.size() < want) {
    const ssize_t n = ::read(fd.get(), buffer, std::min(sizeof(buffer), want - out.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      return {std::nullopt, errno_text(errno)};
    }
    if (n == 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  if (out.size() > limit) return {std::nullopt, "larger than expected"};
  return {std::move(out), {}};
}

std::vector<std::string> list_dir(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool is_bus_id(std::string_view text) {
  if (text.size() != 12 || text[4] != ':' || text[7] != ':' || text[10] != '.') return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i == 4 || i == 7 || i == 10) continue;
    if (std::isxdigit(static_cast<unsigned char>(text[i])) == 0) return false;
  }
  return true;
}

}  // namespace fabricbench::detail
