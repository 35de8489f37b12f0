#include "fabricbench/core/fd.hpp"

#include <cerrno>

#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"

namespace fabricbench {

void Fd::close_checked(std::string_view what) {
  const int fd = std::exchange(fd_, -1);
  if (fd >= 0 && ::close(fd) != 0) throw SystemError(fmt::format("close {}: {}", what, errno_text(errno)));
}

void Fd::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace fabricbench
