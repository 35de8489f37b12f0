#include "fabricbench/transport/cuda/gpu_wait.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

namespace fabricbench {

WaitEnd poll_until(const std::function<PollState()>& look, Deadline deadline, const std::function<Deadline()>& now) {
  for (int polls = 1;; ++polls) {
    switch (look()) {
      case PollState::done:
        return WaitEnd::done;
      case PollState::failed:
        return WaitEnd::failed;
      case PollState::pending:
        break;
    }
    if (now() > deadline) return WaitEnd::expired;
    // Short waits first (a small operation finishes in microseconds).
    if (polls < 100)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(polls < 1000 ? 20 : 500));
  }
}

TeardownEnd tear_down(const CommTeardown& comm, Deadline deadline, const std::function<Deadline()>& now) {
  if (comm.state() != PollState::done) {
    comm.abort();
    return TeardownEnd::aborted_busy;
  }
  if (!comm.finalize()) {
    comm.abort();
    return TeardownEnd::aborted_failed;
  }
  switch (poll_until(comm.state, deadline, now)) {
    case WaitEnd::done:
      comm.destroy();
      return TeardownEnd::destroyed;
    case WaitEnd::failed:
      comm.abort();
      return TeardownEnd::aborted_failed;
    case WaitEnd::expired:
      break;
  }
  comm.abort();
  return TeardownEnd::aborted_expired;
}

int nccl_launches_per_iteration(Op op, int nranks) {
  if (op != Op::alltoall) return 1;
  return std::max(1, (nranks + 7) / 8);
}

int held_iteration_limit(Op op, int nranks, bool per_iteration) {
  const int per_iteration_entries =
      nccl_launches_per_iteration(op, nranks) * nccl_entries_per_launch + (per_iteration ? 1 : 0);
  const int room = held_queue_budget - 3;  // the hold kernel, the start and the end events
  return std::max(0, room / per_iteration_entries);
}

bool launch_blocking(const std::function<const char*(const char*)>& getenv) {
  const char* v = getenv("CUDA_LAUNCH_BLOCKING");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

}  // namespace fabricbench
