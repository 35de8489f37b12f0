#include <chrono>
#include <ctime>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fabricbench/comm/layout.hpp"

namespace fabricbench {
namespace {

TEST(LayoutMpi, AllRanksOnThisMachineFormOneNode) {
  const Comm world = Comm::world();
  const Layout layout = discover_layout(world);
  EXPECT_EQ(layout.ranks, world.size());
  EXPECT_EQ(layout.rank, world.rank());
  EXPECT_EQ(layout.nodes, 1);
  EXPECT_EQ(layout.ranks_per_node, std::vector<int>{world.size()});
  EXPECT_EQ(layout.local_rank, world.rank());
  EXPECT_EQ(layout.hostnames.front(), this_hostname());
}

TEST(CommMpi, SplitGivesOwnedSubgroups) {
  const Comm world = Comm::world();
  const Comm half = world.split(world.rank() % 2, world.rank());
  EXPECT_FALSE(half.empty());
  EXPECT_EQ(half.size(), (world.size() + 1 - world.rank() % 2) / 2);
  const Comm none = world.split(-1, 0);
  EXPECT_TRUE(none.empty());
  const auto names = world.allgather(fmt::format("r{}", world.rank()));
  ASSERT_EQ(static_cast<int>(names.size()), world.size());
  EXPECT_EQ(names.back(), fmt::format("r{}", world.size() - 1));
}

TEST(CommMpi, TypedValuesCrossExactly) {
  const Comm world = Comm::world();
  struct Place {
    int rank;
    double third;
  };
  const std::vector<Place> all = world.allgather_value(Place{world.rank(), world.rank() / 3.0});
  ASSERT_EQ(static_cast<int>(all.size()), world.size());
  for (int r = 0; r < world.size(); ++r) {
    EXPECT_EQ(all[static_cast<std::size_t>(r)].rank, r);
    EXPECT_EQ(all[static_cast<std::size_t>(r)].third, r / 3.0);
  }
  const int root = world.size() - 1;
  EXPECT_EQ(world.broadcast_bytes(world.rank() == root ? "the root's words" : "", root), "the root's words");
}

double process_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The members that arrive early wait for the last one, asleep: a plain
// barrier spins, and on ranks that share cores takes them from the members
// still measuring.
TEST(CommMpi, AQuietBarrierWaitsForTheLastMemberAsleep) {
  const Comm world = Comm::world();
  const int last = world.size() - 1;
  constexpr double late_s = 0.3;
  world.barrier();
  if (world.rank() == last) std::this_thread::sleep_for(std::chrono::duration<double>(late_s));
  const auto started = std::chrono::steady_clock::now();
  const double cpu_before = process_cpu_s();
  world.quiet_barrier();
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double cpu_s = process_cpu_s() - cpu_before;
  if (world.rank() == last) return;
  EXPECT_GE(wall_s, 0.5 * late_s);  // it waited for the late member
  EXPECT_LT(cpu_s, 0.5 * wall_s) << "on the CPU for " << cpu_s << " s of a " << wall_s << " s wait";
}

}  // namespace
}  // namespace fabricbench
