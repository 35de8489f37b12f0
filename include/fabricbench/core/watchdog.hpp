#pragma once
// A deadline for the MPI path, and the end of a run on SIGINT / SIGTERM.
//
// MPI calls block without a timeout: a stopped rank or a downed link leaves
// the others waiting inside a collective. A Watchdog thread watches the
// rank's progress (the phase of the run, and the op and size of the step the
// transport began last): when nothing new has begun for `timeout`, or when
// SIGINT or SIGTERM arrives, it prints one line naming host, rank, phase, op
// and size, lets the lead rank save what it has (complete: false, with the
// reason), and ends the process with the code given for each (the app's
// exit_error, 4, and exit_interrupted, 5). Under mpirun the ending rank takes the job
// down with it.
//
// The notes are lock-free and static, so the transport can give them from
// its hot path without knowing whether a watchdog runs; they go to the one
// Watchdog alive in the process, if any.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <sys/types.h>

#include "fabricbench/core/signal_relay.hpp"

namespace fabricbench {

class Watchdog {
 public:
  // `last_words(reason)` runs on the watchdog's thread before the process
  // ends (the lead rank saves its result there); it must not block on MPI.
  // Non-lead ranks wait `grace` longer, so the lead's line and file come
  // first when every rank waits on one that stopped.
  // The process ends with `timeout_code` on a timeout and `signal_code` on
  // SIGINT/SIGTERM (the app's exit codes; passed in, so that this low layer
  // knows none of the app).
  Watchdog(std::chrono::milliseconds timeout, std::string host, int rank, bool lead, int timeout_code, int signal_code);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void set_last_words(std::function<void(const std::string& reason)> last_words);

  // No deadline from now on (a transport with deadlines of its own); signals
  // are still handled.
  void disarm_deadline() { armed_ = false; }
  // The deadline again from now (a phase that waits on MPI or the file system
  // while a transport with deadlines of its own is in use).
  void rearm_deadline();

  // A phase of the run began ("layout", "topology", "sweep", "ladder",
  // "pairs"): names the phase and restarts the deadline. `name` must be a
  // string literal (kept by pointer).
  static void note_phase(const char* name);
  // A step began (op name literal, message bytes): restarts the deadline.
  static void note_step(const char* op, std::size_t bytes);
  // Work to do before the process ends on a timeout or a signal, before the
  // last words (remove this rank's temporary files): replaces the previous
  // cleanup; an empty function clears it. Goes to the active watchdog; a
  // no-op without one.
  static void set_cleanup(std::function<void()> cleanup);
  // Creates what needs a cleanup and sets the cleanup in one step: `create`
  // runs while a timeout or a signal waits, and returns the cleanup of what
  // it made (empty: nothing). A signal between a file's creation and its
  // cleanup's registration left the file behind.
  static void create_with_cleanup(const std::function<std::function<void()>()>& create);

  // The line the watchdog prints for a timeout, without "fabricbench: error: ".
  [[nodiscard]] std::string timeout_reason() const;
  // Under a launcher with several ranks (core/signal_relay.hpp): the lead's
  // listener or another rank's sender. Another rank then tells the lead its
  // reason before it ends; the lead saves that reason, also when the
  // launcher's SIGTERM reaches it after. Once; later calls are ignored.
  void set_relay(std::unique_ptr<SignalRelay> relay);

 private:
  void watch();
  [[noreturn]] void fire(const std::string& reason, int code);
  // The lead, on the launcher's SIGCONT (its notice that the job ends):
  // the relayed reason if one waits, else a save with the launcher's.
  void launcher_notice(const SignalRelay* relay);
  [[nodiscard]] std::string launcher_reason(const char* signal_name) const;
  [[nodiscard]] bool has_cleanup();
  // The lead: ends the run with the reason another rank sent, if one waits.
  void fire_with_relayed(const SignalRelay* relay);
  // `reason`, and if this process did not run for a while before it, that.
  [[nodiscard]] std::string with_stall(std::string reason) const;

  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds grace_;
  std::string host_;
  int rank_;
  bool lead_;
  int timeout_code_;
  int signal_code_;
  pid_t main_thread_;
  // The watchdog thread's own: the longest time this process did not run in
  // the current step, and the main thread's CPU wait when the step began.
  std::atomic<std::int64_t> stalled_ns_{0};
  std::atomic<std::int64_t> base_cpu_wait_ns_{-1};
  std::int64_t stalled_at_ = 0;  // when a stall was last seen
  bool noticed_ = false;         // the lead saved on the launcher's notice
  std::atomic<SignalRelay*> relay_{nullptr};
  std::unique_ptr<SignalRelay> relay_owner_;
  std::atomic<const char*> phase_{"start-up"};
  std::atomic<const char*> op_{nullptr};
  std::atomic<std::size_t> bytes_{0};
  std::atomic<std::int64_t> last_ns_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> armed_{true};
  std::mutex words_mutex_;
  std::function<void(const std::string&)> last_words_;
  std::function<void()> cleanup_;
  int pipe_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace fabricbench
