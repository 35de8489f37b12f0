// GoogleTest main for tests under mpirun: every rank runs every test (they
// are collective); only rank 0 prints, and any rank's failure fails the run.

#include <gtest/gtest.h>

#include "fabricbench/comm/comm.hpp"

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
  return any != 0 ? 1 : 0;
}
