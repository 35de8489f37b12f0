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

}  // namespace
}  // namespace fabricbench
