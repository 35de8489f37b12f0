// GoogleTest main for tests under mpirun: every rank runs every test (they
// are collective); only rank 0 prints, and any rank's failure fails the run.

#include <gtest/gtest.h>

#include "fabricbench/comm/comm.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FB_LEAK_CHECK_BEFORE_FINALIZE 1
#include <sanitizer/lsan_interface.h>
#endif
#endif

int main(int argc, char** argv) {
  const fabricbench::MpiSession session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (fabricbench::Comm::world().rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS();
  // Agree on the outcome so every rank exits alike.
  std::int64_t any = failed != 0 ? 1 : 0;
  fabricbench::Comm::world().allreduce_max(std::span<std::int64_t>(&any, 1));
#ifdef FB_LEAK_CHECK_BEFORE_FINALIZE
  // The leak check while Open MPI's threads are idle, before MPI_Finalize
  // tears them down: LeakSanitizer's at-exit check stops every thread, and
  // once (1 run in about 40 on 4 ranks) its tracer crashed on a thread Open
  // MPI was ending, failing a run whose tests had all passed. Every test
  // object is gone by now; what MPI keeps is suppressed as before.
  __lsan_do_leak_check();
#endif
  return any != 0 ? 1 : 0;
}
