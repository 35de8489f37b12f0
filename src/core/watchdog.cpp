#include "fabricbench/core/watchdog.hpp"

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
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

// Set once the watchdog has begun the end of the process.
std::atomic<bool> firing{false};
// The parent when the watchdog began (the launcher or its daemon), kept: by
// the time a signal it sent is handled it may be gone, and getppid() then
// names another process.
std::atomic<pid_t> parent_pid{0};

// One record per signal: its number, and whether the parent process (the
// launcher's daemon, passing a signal on) sent it. Two bytes: a pipe write
// that small is atomic.
extern "C" void on_signal(int sig, siginfo_t* info, void* /*context*/) {
  const int saved = errno;
  const int fd = signal_pipe.load();
  const bool from_parent =
      info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE) && info->si_pid == parent_pid.load();
  // A second signal from the user while the file is written ends the
  // process at once; the launcher's, which follow one another within
  // milliseconds as it ends a job, wait for the save.
  if (firing.load() && !from_parent && sig != SIGCONT) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
  const std::array<unsigned char, 2> record{static_cast<unsigned char>(sig), static_cast<unsigned char>(from_parent)};
  if (fd >= 0) (void)!::write(fd, record.data(), record.size());
  errno = saved;
}

// The time the main thread of this process has waited for a CPU (the
// scheduler's run delay), in ns; -1 when the kernel does not say.
std::int64_t cpu_wait_ns(pid_t thread) {
  std::FILE* f = std::fopen(fmt::format("/proc/self/task/{}/schedstat", thread).c_str(), "re");
  if (f == nullptr) return -1;
  unsigned long long on_cpu = 0;
  unsigned long long waiting = 0;
  const int got = std::fscanf(f, "%llu %llu", &on_cpu, &waiting);
  std::fclose(f);
  return got == 2 ? static_cast<std::int64_t>(waiting) : -1;
}

double seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

constexpr std::int64_t ms_ns = 1'000'000;
// A poll meant to last 100 ms that took this long: the process did not run.
constexpr std::int64_t stall_ns = 1000 * ms_ns;

// The main thread leaving while a watchdog is alive: MPI ends a process
// whose peer is gone, as the lead finds when the launcher continues it after
// a stop, or ends the job. The watchdog gets a moment to read a reason
// another rank sent, and once it has begun the end, the time to save: it
// ends the process itself, so the result file is whole and no temporary
// stays.
extern "C" void wait_for_last_words() {
  if (active.load() == nullptr) return;  // the run's own end: no watchdog any more
  for (int i = 0; i < 30 && !firing.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!firing.load()) return;
  for (int i = 0; i < 1000; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  remove_unfinished_temporaries();
}

struct sigaction previous_int {};
struct sigaction previous_term {};
struct sigaction previous_cont {};

}  // namespace

Watchdog::Watchdog(std::chrono::milliseconds timeout, std::string host, int rank, bool lead, int timeout_code,
                   int signal_code)
    : timeout_(timeout),
      grace_(lead ? std::chrono::milliseconds(0) : std::chrono::milliseconds(2000)),
      host_(std::move(host)),
      rank_(rank),
      lead_(lead),
      timeout_code_(timeout_code),
      signal_code_(signal_code),
      main_thread_(static_cast<pid_t>(::syscall(SYS_gettid))) {
  last_ns_ = now_ns();
  parent_pid = ::getppid();
  if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) pipe_[0] = pipe_[1] = -1;
  active = this;
  signal_pipe = pipe_[1];
  struct sigaction action {};
  action.sa_sigaction = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | SA_SIGINFO;
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
  sigaction(SIGCONT, &action, &previous_cont);
  static const bool hooked = std::atexit(wait_for_last_words) == 0;
  (void)hooked;
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
  sigaction(SIGCONT, &previous_cont, nullptr);
  signal_pipe = -1;
  active = nullptr;
  stopping_ = true;
  const std::array<unsigned char, 2> wake{0, 0};
  if (pipe_[1] >= 0) (void)!::write(pipe_[1], wake.data(), wake.size());
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

void Watchdog::create_with_cleanup(const std::function<std::function<void()>()>& create) {
  Watchdog* w = active.load();
  if (w == nullptr) {
    (void)create();
    return;
  }
  const std::lock_guard lock(w->words_mutex_);
  w->cleanup_ = create();
}

void Watchdog::set_relay(std::unique_ptr<SignalRelay> relay) {
  if (relay_.load() != nullptr) return;  // once
  relay_owner_ = std::move(relay);
  relay_ = relay_owner_.get();
}

std::string Watchdog::timeout_reason() const {
  const char* op = op_.load();
  const double limit = static_cast<double>(timeout_.count()) / 1000.0;
  const std::string where = op != nullptr ? fmt::format(", {} at {}", op, format_size(bytes_.load())) : std::string();
  const std::int64_t now = now_ns();
  const std::int64_t window = now - last_ns_.load();
  const std::int64_t stalled = stalled_ns_.load();
  const std::int64_t ran = window - stalled;
  // The deadline passed because this process did not run (stopped, then
  // continued), not because it waited for the others.
  if (stalled >= stall_ns && ran < std::chrono::duration_cast<std::chrono::nanoseconds>(timeout_).count())
    return fmt::format(
        "timeout: rank {} on {} did not run for {:.1f} s (stopped, or starved of CPU) in the {} phase{} "
        "(--timeout {})",
        rank_, host_, seconds(stalled), phase_.load(), where, limit);
  std::string reason = fmt::format("timeout: rank {} on {} waited more than {} s in the {} phase{} (--timeout {})",
                                   rank_, host_, limit, phase_.load(), where, limit);
  // A loaded host: the wait may be one batch that takes longer than the
  // deadline rather than a rank that stopped.
  const std::int64_t waited_for_cpu = base_cpu_wait_ns_ >= 0 ? cpu_wait_ns(main_thread_) - base_cpu_wait_ns_ : -1;
  if (waited_for_cpu >= 0 && window > 0 && 4 * waited_for_cpu >= window)
    reason += fmt::format(
        "; this host is loaded: rank {} waited {:.1f} s of those {:.1f} s for a CPU, so one batch may take longer "
        "than the deadline: raise --timeout, or run fewer ranks per core",
        rank_, seconds(waited_for_cpu), seconds(window));
  return reason;
}

std::string Watchdog::with_stall(std::string reason) const {
  if (stalled_ns_ >= stall_ns)
    reason += fmt::format("; rank {} on {} did not run for {:.1f} s before this (stopped, or starved of CPU)", rank_,
                          host_, seconds(stalled_ns_.load()));
  return reason;
}

void Watchdog::fire_with_relayed(const SignalRelay* relay) {
  if (!lead_ || relay == nullptr) return;
  const std::optional<std::string> heard = relay->heard();
  if (!heard) return;
  const std::size_t space = heard->find(' ');
  const bool timed_out = heard->substr(0, space) == std::to_string(timeout_code_);
  fire(with_stall(space == std::string::npos ? *heard : heard->substr(space + 1)),
       timed_out ? timeout_code_ : signal_code_);
}

std::string Watchdog::launcher_reason(const char* signal_name) const {
  return fmt::format(
      "interrupted by {} from the launcher on {} (rank {}) in the {} phase: the launcher was "
      "interrupted, or another rank ended first (its error is above)",
      signal_name, host_, rank_, phase_.load());
}

void Watchdog::launcher_notice(const SignalRelay* relay) {
  fire_with_relayed(relay);
  // A cleanup waits (the storage test's files, their disk busy): the save
  // comes at the SIGTERM, after it, with what it removed and left.
  if (noticed_ || has_cleanup()) return;
  noticed_ = true;
  // Saved now, without ending: the run goes on if the job does. Not synced:
  // the SIGTERM comes a second after the SIGCONT and the SIGKILL within
  // milliseconds of it, and a busy disk's fsync can outlast that (the file
  // then kept the save before, without the reason).
  const UnsyncedWrites unsynced;
  const std::lock_guard lock(words_mutex_);
  try {
    if (last_words_) last_words_(with_stall(launcher_reason("SIGTERM")));
  } catch (const std::exception& e) {
    const std::string line =
        fmt::format("fabricbench: error: while saving as the launcher ends the job: {}\n", e.what());
    (void)!::write(STDERR_FILENO, line.data(), line.size());
  }
}

bool Watchdog::has_cleanup() {
  const std::lock_guard lock(words_mutex_);
  return static_cast<bool>(cleanup_);
}

void Watchdog::watch() {
  const auto limit_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout_ + grace_).count();
  std::int64_t previous_tick = now_ns();
  std::int64_t seen_step = -1;
  while (!stopping_) {
    const SignalRelay* const listening = relay_.load();
    std::array<pollfd, 2> p{pollfd{pipe_[0], POLLIN, 0},
                            pollfd{lead_ && listening != nullptr ? listening->fd() : -1, POLLIN, 0}};
    const int ready = ::poll(p.data(), p.size(), 100);
    if (stopping_) return;
    // Read again: the relay may have come while this thread waited (or was
    // stopped with the process).
    SignalRelay* const relay = relay_.load();
    const std::int64_t tick = now_ns();
    if (const std::int64_t step = last_ns_.load(); step != seen_step) {  // a new step: a new window
      seen_step = step;
      stalled_ns_ = 0;
      base_cpu_wait_ns_ = cpu_wait_ns(main_thread_);
    }
    if (tick - previous_tick >= stall_ns) {
      stalled_ns_ = std::max(stalled_ns_.load(), tick - previous_tick);
      stalled_at_ = tick;
    }
    previous_tick = tick;
    // The reason of the rank that ended first (the lead only listens),
    // also when poll() returned for a stop's lost time rather than for it.
    fire_with_relayed(relay);
    if (ready > 0 && (p[0].revents & POLLIN) != 0) {
      std::array<unsigned char, 2> record{};
      while (::read(pipe_[0], record.data(), record.size()) == 2) {
        const int sig = record[0];
        // Passed on by the launcher: it was signalled, or a rank ended and
        // it stops the rest. Not this rank's news to tell.
        const bool passed_on = record[1] != 0 && relay != nullptr;
        if (sig == SIGCONT) {
          // Open MPI ends a job with SIGCONT, SIGTERM a second later, then
          // SIGKILL; the lead saves in that second (a continue after a stop
          // is no such notice).
          if (lead_ && passed_on && tick - stalled_at_ >= stall_ns) launcher_notice(relay);
          continue;
        }
        if (sig != SIGINT && sig != SIGTERM) continue;
        const char* name = sig == SIGINT ? "SIGINT" : "SIGTERM";
        const std::string reason =
            fmt::format("interrupted by {} on {} (rank {}) in the {} phase", name, host_, rank_, phase_.load());
        if (!lead_ && !passed_on && relay != nullptr) relay->tell(fmt::format("{} {}", signal_code_, reason));
        if (!lead_ || !passed_on) fire(with_stall(reason), signal_code_);
        // The lead: the reason of the rank that ended first, if it came
        // (that rank sent it before it ended, before the launcher saw the
        // end), else the launcher's.
        fire_with_relayed(relay);
        // Saved on the notice already: the last words, after which no other
        // thread's write lands, skip the launcher's own reason within
        // seconds of it (the SIGKILL may be milliseconds away; the app's
        // install_last_words) and save any other.
        fire(with_stall(launcher_reason(name)), signal_code_);
      }
    }
    if (armed_ && tick - last_ns_.load() > limit_ns) {
      const std::string reason = timeout_reason();
      if (!lead_ && relay != nullptr) relay->tell(fmt::format("{} {}", timeout_code_, reason));
      fire(reason, timeout_code_);
    }
  }
}

void Watchdog::fire(const std::string& reason, int code) {
  firing = true;  // a second signal from the user now ends the process at once (on_signal)
  // A signal reaches every rank (mpirun passes it on): one line, the lead's.
  if (code != signal_code_ || grace_.count() == 0) {
    const std::string line = "fabricbench: error: " + reason + '\n';
    (void)!::write(STDERR_FILENO, line.data(), line.size());  // one write: ranks sharing stderr do not interleave
  }
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
