#include "fabricbench/comm/layout.hpp"

#include <gtest/gtest.h>

#include "fabricbench/core/error.hpp"

namespace fabricbench {
namespace {

TEST(Layout, NodesAreSharedMemoryGroupsOrderedByHostname) {
  // Ranks 0,2 on "zeta" (leader 0); ranks 1,3,4 on "alpha" (leader 1).
  const std::vector<std::string> hosts{"zeta", "alpha", "zeta", "alpha", "alpha"};
  const std::vector<int> leaders{0, 1, 0, 1, 1};
  const std::vector<int> locals{0, 0, 1, 1, 2};
  const Layout l = layout_from(2, hosts, leaders, locals);
  EXPECT_EQ(l.nodes, 2);
  EXPECT_EQ(l.hostnames, (std::vector<std::string>{"alpha", "zeta"}));
  EXPECT_EQ(l.ranks_per_node, (std::vector<int>{3, 2}));
  EXPECT_EQ(l.node_of_rank, (std::vector<int>{1, 0, 1, 0, 0}));
  EXPECT_EQ(l.node, 1);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.rank, 2);
  EXPECT_EQ(l.ranks, 5);
}

TEST(Layout, CollidingHostnamesStaySeparateNodes) {
  // Two containers both called "worker": the shared-memory groups decide.
  const std::vector<std::string> hosts{"worker", "worker", "worker", "worker"};
  const std::vector<int> leaders{0, 0, 2, 2};
  const std::vector<int> locals{0, 1, 0, 1};
  const Layout l = layout_from(3, hosts, leaders, locals);
  EXPECT_EQ(l.nodes, 2);
  EXPECT_EQ(l.ranks_per_node, (std::vector<int>{2, 2}));
  EXPECT_EQ(l.node, 1);
}

TEST(Layout, SingleRank) {
  const Layout l = layout_from(0, {"solo"}, {0}, {0});
  EXPECT_EQ(l.nodes, 1);
  EXPECT_EQ(l.ranks_per_node, std::vector<int>{1});
  EXPECT_EQ(l.hostnames, std::vector<std::string>{"solo"});
}

TEST(Layout, ForgedIndicesAreRefusedNotFollowed) {
  // A forged round file of the folder group once named leader 1000000.
  EXPECT_THROW(layout_from(0, {"a", "b"}, {0, 1000000}, {0, 0}), SystemError);
  EXPECT_THROW(layout_from(0, {"a", "b"}, {0, -1}, {0, 0}), SystemError);
  EXPECT_THROW(layout_from(0, {"a", "b"}, {0, 1}, {0, 7}), SystemError);
  EXPECT_THROW(layout_from(0, {"a", "b"}, {0}, {0, 0}), SystemError);
  EXPECT_THROW(layout_from(5, {"a", "b"}, {0, 1}, {0, 0}), SystemError);
}

}  // namespace
}  // namespace fabricbench
