#include "fabricbench/core/watchdog.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/core/safe_file.hpp"
#include "fabricbench/core/sizes.hpp"

namespace fabricbench {
namespace {

std::atomic<Watchdog*> active{nullptr};
// The write end of the active watchdog's pipe, for the signal handler.
std::atomic<int> signal_pipe{-1};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

extern "C" void on_signal(int sig) {
  const int saved = errno;
  const int fd = signal_pipe.load();
  const auto byte = static_cast<unsigned char>(sig);
  if (fd >= 0) (void)!::write(fd, &byte, 1);
  errno = saved;
}

struct sigaction previous_int {};
struct sigaction previous_term {};

}  // namespace

Watchdog::Watchdog(std::chrono::milliseconds timeout, std::string host, int rank, bool lead, int timeout_code,
                   int signal_code)
    : timeout_(timeout),
      grace_(lead ? std::chrono::milliseconds(0) : std::chrono::milliseconds(2000)),
      host_(std::move(host)),
      rank_(rank),
      timeout_code_(timeout_code),
      signal_code_(signal_code) {
  last_ns_ = now_ns();
  if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) pipe_[0] = pipe_[1] = -1;
  active = this;
  signal_pipe = pipe_[1];
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
  signal_pipe = -1;
  active = nullptr;
  stopping_ = true;
  const unsigned char wake = 0;
  if (pipe_[1] >= 0) (void)!::write(pipe_[1], &wake, 1);
  if (thread_.joinable()) thread_.join();
  for (const int fd : pipe_)
    if (fd >= 0) ::close(fd);
}

void Watchdog::set_last_words(std::function<void(const std::string&)> last_words) {
  const std::lock_guard lock(words_mutex_);
  last_words_ = std::move(last_words);
}

void Watchdog::note_phase(const char* name) {
  if (Watchdog* w = active.load()) {
    w->phase_ = name;
    w->op_ = nullptr;
    w->last_ns_ = now_ns();
  }
}

void Watchdog::note_step(const char* op, std::size_t bytes) {
  if (Watchdog* w = active.load()) {
    w->op_ = op;
    w->bytes_ = bytes;
    w->last_ns_ = now_ns();
  }
}

void Watchdog::rearm_deadline() {
  last_ns_ = now_ns();
  armed_ = true;
}

void Watchdog::set_cleanup(std::function<void()> cleanup) {
  if (Watchdog* w = active.load()) {
    const std::lock_guard lock(w->words_mutex_);
    w->cleanup_ = std::move(cleanup);
  }
}

std::string Watchdog::timeout_reason() const {
  const char* op = op_.load();
  return fmt::format("timeout: rank {} on {} waited more than {} s in the {} phase{} (--timeout {})", rank_, host_,
                     static_cast<double>(timeout_.count()) / 1000.0, phase_.load(),
                     op != nullptr ? fmt::format(", {} at {}", op, format_size(bytes_.load())) : std::string(),
                     static_cast<double>(timeout_.count()) / 1000.0);
}

void Watchdog::watch() {
  const auto limit_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout_ + grace_).count();
  while (!stopping_) {
    pollfd p{pipe_[0], POLLIN, 0};
    const int ready =
        pipe_[0] >= 0 ? ::poll(&p, 1, 100) : (std::this_thread::sleep_for(std::chrono::milliseconds(100)), 0);
    if (stopping_) return;
    if (ready > 0 && (p.revents & POLLIN) != 0) {
      unsigned char sig = 0;
      while (::read(pipe_[0], &sig, 1) == 1) {
        if (sig == SIGINT || sig == SIGTERM)
          fire(fmt::format("interrupted by {} on {} (rank {}) in the {} phase", sig == SIGINT ? "SIGINT" : "SIGTERM",
                           host_, rank_, phase_.load()),
               signal_code_);
      }
    }
    if (armed_ && now_ns() - last_ns_.load() > limit_ns) fire(timeout_reason(), timeout_code_);
  }
}

void Watchdog::fire(const std::string& reason, int code) {
  // A second signal while the file is written ends the process at once.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  // A signal reaches every rank (mpirun passes it on): one line, the lead's.
  if (code != signal_code_ || grace_.count() == 0) std::cerr << "fabricbench: error: " << reason << '\n' << std::flush;
  begin_final_writes();
  {
    const std::lock_guard lock(words_mutex_);
    try {
      if (cleanup_) cleanup_();
    } catch (const std::exception& e) {
      std::cerr << "fabricbench: error: while cleaning up: " << e.what() << '\n';
    }
    try {
      if (last_words_) last_words_(reason);
    } catch (const std::exception& e) {
      std::cerr << "fabricbench: error: while saving after the " << (code == timeout_code_ ? "timeout" : "signal")
                << ": " << e.what() << '\n';
    }
  }
  remove_unfinished_temporaries();
  std::cout << std::flush;
  std::fflush(nullptr);
  // The main thread is blocked inside MPI and cannot unwind: end here. Under
  // mpirun a rank that exits without MPI_Finalize makes it end the job.
  std::_Exit(code);
}

}  // namespace fabricbench
