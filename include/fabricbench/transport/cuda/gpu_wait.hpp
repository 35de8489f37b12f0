#pragma once
// The host-side rules of the GPU path, kept free of CUDA and NCCL so they
// are tested on any machine: polling a state against a deadline, how many
// iterations fit behind the stream hold, and when the hold must not be used.

#include <chrono>
#include <cstddef>
#include <functional>

#include "fabricbench/core/types.hpp"

namespace fabricbench {

using Deadline = std::chrono::steady_clock::time_point;

// What one look at an asynchronous operation found.
enum class PollState { done, pending, failed };
// How a wait ended.
enum class WaitEnd { done, failed, expired };

// Calls `look` until it says done or failed, or until `deadline` has passed
// (then `expired`, after at least one look). Between looks it yields, then
// sleeps a little longer, so a long wait does not burn a core. `now` is the
// clock (a test passes its own).
WaitEnd poll_until(
    const std::function<PollState()>& look, Deadline deadline,
    const std::function<Deadline()>& now = [] { return std::chrono::steady_clock::now(); });

// The steps of releasing a NCCL communicator, as calls (a test passes fakes).
struct CommTeardown {
  std::function<PollState()> state;  // ncclCommGetAsyncError: success, in progress, or an error
  std::function<bool()> finalize;    // ncclCommFinalize; false when the call itself failed
  std::function<void()> destroy;     // ncclCommDestroy
  std::function<void()> abort;       // ncclCommAbort
};
enum class TeardownEnd { destroyed, aborted_busy, aborted_failed, aborted_expired };
// Finalize, then poll until the communicator has left ncclInProgress, then
// destroy. NCCL's ncclCommDestroy and ncclCommFinalize open a group and
// return from ncclCommEnsureReady without closing it when the communicator
// is still in progress, which leaves the calling thread inside a group for
// good: so a communicator still busy before finalize, one in error, one
// whose finalize fails and one whose finalize outlives `deadline` are
// aborted instead, and destroy is never called on a busy communicator.
TeardownEnd tear_down(
    const CommTeardown& comm, Deadline deadline,
    const std::function<Deadline()>& now = [] { return std::chrono::steady_clock::now(); });

// Stream entries NCCL 2.28 queues for one NCCL kernel launch (ncclLaunchPrepare
// and ncclLaunchFinish in enqueue.cc): on the user's stream the waits on NCCL's
// device stream, on the per-device launch-order stream and on the proxy's host
// stream, the kernel, and the "finished" event; on NCCL's own streams the
// matching records and waits, which back up behind the held stream too.
inline constexpr int nccl_entries_per_launch = 8;
// Entries one stream may queue before a launch blocks the host: CUDA's
// pending-launch queue holds about a thousand; half of it is used.
inline constexpr int held_queue_budget = 512;

// NCCL kernel launches one iteration of `op` on `nranks` ranks may need: one
// for a collective; a grouped send/recv to every peer (all-to-all) is cut
// into several launches when there are many peers, counted here as one per
// eight peers.
int nccl_launches_per_iteration(Op op, int nranks);
// The most iterations a held batch may queue: each iteration's NCCL entries
// (plus its event when per-iteration stamps are taken) within
// held_queue_budget, after the hold and the two batch events. At least 0.
int held_iteration_limit(Op op, int nranks, bool per_iteration);

// CUDA_LAUNCH_BLOCKING=1 makes every launch wait for the previous work: the
// hold kernel's own launch would then never return. True when `getenv` says
// it is set to anything but "0" or empty.
bool launch_blocking(const std::function<const char*(const char*)>& getenv);

}  // namespace fabricbench
