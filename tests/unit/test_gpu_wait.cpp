// The host-side rules of the GPU path against fake state sources and a fake
// clock: polling to a deadline, a communicator's teardown order, the size of
// a held batch and CUDA_LAUNCH_BLOCKING.
#include "fabricbench/transport/cuda/gpu_wait.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace fabricbench {
namespace {

using namespace std::chrono_literals;

// A clock that moves by `step` at every reading.
struct FakeClock {
  Deadline t{};
  std::chrono::milliseconds step{1};
  Deadline operator()() { return t += step; }
};

TEST(PollUntil, ReturnsDoneOnceTheStateLeavesPending) {
  int looks = 0;
  FakeClock clock;
  const WaitEnd end =
      poll_until([&] { return ++looks < 5 ? PollState::pending : PollState::done; }, Deadline{} + 1h, std::ref(clock));
  EXPECT_EQ(end, WaitEnd::done);
  EXPECT_EQ(looks, 5);
}

TEST(PollUntil, ReportsAFailureAtOnce) {
  int looks = 0;
  FakeClock clock;
  const WaitEnd end = poll_until([&] { return ++looks < 3 ? PollState::pending : PollState::failed; }, Deadline{} + 1h,
                                 std::ref(clock));
  EXPECT_EQ(end, WaitEnd::failed);
  EXPECT_EQ(looks, 3);
}

TEST(PollUntil, ExpiresAtTheDeadlineWhenNeverReady) {
  int looks = 0;
  FakeClock clock;
  clock.step = 10ms;
  const WaitEnd end = poll_until([&] { return ++looks, PollState::pending; }, Deadline{} + 100ms, std::ref(clock));
  EXPECT_EQ(end, WaitEnd::expired);
  EXPECT_EQ(looks, 11);  // the clock reads 110 ms after the 11th look: the first reading past 100 ms
}

TEST(PollUntil, LooksOnceEvenPastTheDeadline) {
  int looks = 0;
  FakeClock clock;
  clock.t = Deadline{} + 1h;
  EXPECT_EQ(poll_until([&] { return ++looks, PollState::done; }, Deadline{}, std::ref(clock)), WaitEnd::done);
  EXPECT_EQ(looks, 1);
}

// A communicator as NCCL's ncclCommGetAsyncError sees it, with every call
// recorded in order.
struct FakeComm {
  std::vector<PollState> states;  // successive answers; the last one repeats
  std::size_t next = 0;
  bool finalize_ok = true;
  std::vector<std::string> calls;
  bool finalized = false;

  CommTeardown steps() {
    return {[this] {
              calls.emplace_back("state");
              const PollState s = states[std::min(next, states.size() - 1)];
              ++next;
              return s;
            },
            [this] {
              calls.emplace_back("finalize");
              finalized = true;
              return finalize_ok;
            },
            [this] {
              calls.emplace_back("destroy");
              // Destroying a communicator still in progress is the bug that
              // leaves the thread inside NCCL's group.
              EXPECT_EQ(states[std::min(next - 1, states.size() - 1)], PollState::done);
            },
            [this] { calls.emplace_back("abort"); }};
  }
};

TEST(TearDown, DestroysOnlyAfterTheFinalizeHasLeftInProgress) {
  FakeComm comm;
  comm.states = {PollState::done, PollState::pending, PollState::pending, PollState::pending, PollState::done};
  FakeClock clock;
  EXPECT_EQ(tear_down(comm.steps(), Deadline{} + 1h, std::ref(clock)), TeardownEnd::destroyed);
  const std::vector<std::string> want = {"state", "finalize", "state", "state", "state", "state", "destroy"};
  EXPECT_EQ(comm.calls, want);
}

TEST(TearDown, AbortsAFinalizeThatOutlivesTheDeadline) {
  FakeComm comm;
  comm.states = {PollState::done, PollState::pending};
  FakeClock clock;
  clock.step = 1s;
  EXPECT_EQ(tear_down(comm.steps(), Deadline{} + 5s, std::ref(clock)), TeardownEnd::aborted_expired);
  EXPECT_EQ(comm.calls.back(), "abort");
  EXPECT_EQ(std::count(comm.calls.begin(), comm.calls.end(), "destroy"), 0);
}

TEST(TearDown, AbortsACommunicatorInErrorWithoutFinalizing) {
  FakeComm comm;
  comm.states = {PollState::failed};
  FakeClock clock;
  EXPECT_EQ(tear_down(comm.steps(), Deadline{} + 1h, std::ref(clock)), TeardownEnd::aborted_busy);
  EXPECT_FALSE(comm.finalized);
  EXPECT_EQ(comm.calls, (std::vector<std::string>{"state", "abort"}));
}

TEST(TearDown, AbortsACommunicatorStillBusyWithAnEarlierCall) {
  // An init or split that never finished: finalize would fail inside
  // NCCL's group start and leave this thread in the group.
  FakeComm comm;
  comm.states = {PollState::pending};
  FakeClock clock;
  EXPECT_EQ(tear_down(comm.steps(), Deadline{} + 1h, std::ref(clock)), TeardownEnd::aborted_busy);
  EXPECT_FALSE(comm.finalized);
}

TEST(TearDown, AbortsWhenTheFinalizeCallOrItsWorkFails) {
  FakeComm refused;
  refused.states = {PollState::done};
  refused.finalize_ok = false;
  FakeClock clock;
  EXPECT_EQ(tear_down(refused.steps(), Deadline{} + 1h, std::ref(clock)), TeardownEnd::aborted_failed);
  EXPECT_EQ(refused.calls.back(), "abort");

  FakeComm broken;
  broken.states = {PollState::done, PollState::pending, PollState::failed};
  EXPECT_EQ(tear_down(broken.steps(), Deadline{} + 1h, std::ref(clock)), TeardownEnd::aborted_failed);
  EXPECT_EQ(broken.calls.back(), "abort");
  EXPECT_EQ(std::count(broken.calls.begin(), broken.calls.end(), "destroy"), 0);
}

TEST(HeldBatch, CountsNcclsOwnEntriesPerIteration) {
  // 509 entries after the hold and the two events; 8 per NCCL launch.
  EXPECT_EQ(held_iteration_limit(Op::allreduce, 8, false), 509 / 8);
  EXPECT_EQ(held_iteration_limit(Op::allreduce, 8, true), 509 / 9);
  // Well under the old cap of 400 fabricbench launches, which ignored NCCL's.
  EXPECT_LT(held_iteration_limit(Op::sendrecv, 2, false) * nccl_entries_per_launch, held_queue_budget);
  for (const Op op : all_ops())
    for (const int n : {1, 2, 8, 64, 512})
      for (const bool stamps : {false, true}) {
        const int limit = held_iteration_limit(op, n, stamps);
        const int entries =
            3 + limit * (nccl_launches_per_iteration(op, n) * nccl_entries_per_launch + (stamps ? 1 : 0));
        EXPECT_LE(entries, held_queue_budget) << name(op) << ' ' << n;
        EXPECT_GE(limit, 0);
      }
}

TEST(HeldBatch, AllToAllWithManyPeersNeedsSeveralLaunches) {
  EXPECT_EQ(nccl_launches_per_iteration(Op::alltoall, 8), 1);
  EXPECT_EQ(nccl_launches_per_iteration(Op::alltoall, 9), 2);
  EXPECT_EQ(nccl_launches_per_iteration(Op::alltoall, 64), 8);
  EXPECT_EQ(nccl_launches_per_iteration(Op::allreduce, 64), 1);
  EXPECT_LT(held_iteration_limit(Op::alltoall, 64, false), held_iteration_limit(Op::allreduce, 64, false));
  // Beyond the budget nothing is held.
  EXPECT_EQ(held_iteration_limit(Op::alltoall, 8 * 64 + 1, false), 0);
}

TEST(LaunchBlocking, OnlyASetNonZeroValueCounts) {
  std::map<std::string, std::string> env;
  const auto getenv = [&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_FALSE(launch_blocking(getenv));
  env["CUDA_LAUNCH_BLOCKING"] = "";
  EXPECT_FALSE(launch_blocking(getenv));
  env["CUDA_LAUNCH_BLOCKING"] = "0";
  EXPECT_FALSE(launch_blocking(getenv));
  env["CUDA_LAUNCH_BLOCKING"] = "1";
  EXPECT_TRUE(launch_blocking(getenv));
}

}  // namespace
}  // namespace fabricbench
