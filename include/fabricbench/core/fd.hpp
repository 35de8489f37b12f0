#pragma once
// A move-only owner of a POSIX file descriptor: closed on every path out, so
// an early return or a throw between open() and close() leaks nothing.

#include <string_view>
#include <utility>

namespace fabricbench {

class Fd {
 public:
  Fd() = default;
  // Takes `fd` as returned by open(), mkostemp() and kin; a negative value
  // (their failure) owns nothing.
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }

  // Closes and reports a failure, which matters after writes (NFS and other
  // file systems may report a write error only at close): throws
  // SystemError naming `what` and the reason. The descriptor is given up
  // either way.
  void close_checked(std::string_view what);

 private:
  void reset() noexcept;

  int fd_ = -1;
};

}  // namespace fabricbench
