#include "fabricbench/analysis/ladders.hpp"
#include "fabricbench/engine/scaling.hpp"

#include <gtest/gtest.h>

namespace fabricbench {
namespace {

TEST(Ladder, PowersOfTwoThenAllThenRail) {
  const auto levels = plan_ladder(6);
  ASSERT_EQ(levels.size(), 5U);  // 1, 2, 4, 6, rail
  EXPECT_EQ(levels[0].nodes_per_group, 1);
  EXPECT_EQ(levels[0].groups, 6);
  EXPECT_EQ(levels[1].group_of_node, (std::vector<int>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(levels[2].nodes_per_group, 4);
  EXPECT_EQ(levels[2].groups, 1);
  EXPECT_EQ(levels[2].group_of_node, (std::vector<int>{0, 0, 0, 0, -1, -1}));  // two nodes idle
  EXPECT_EQ(levels[3].nodes_per_group, 6);
  EXPECT_EQ(levels[4].kind, LevelKind::rail);
  const auto four = plan_ladder(4);
  ASSERT_EQ(four.size(), 4U);
  EXPECT_EQ(four[2].nodes_per_group, 4);
  const auto one = plan_ladder(1);
  ASSERT_EQ(one.size(), 1U);  // no rail level on one node
  EXPECT_EQ(one[0].groups, 1);
}

GroupResult group(double busbw) {
  GroupResult g;
  g.busbw_gbs = busbw;
  return g;
}

TEST(Ladder, EfficiencyAgainstOneNodeOfTheSameOpAndSize) {
  std::vector<LevelResult> levels(3);
  levels[0].nodes_per_group = 1;
  levels[0].groups = {group(100), group(90), group(110)};
  levels[1].nodes_per_group = 2;
  levels[1].groups = {group(40), group(50)};
  levels[2].nodes_per_group = 1;
  levels[2].op = Op::allgather;
  levels[2].groups = {group(10)};
  for (auto& l : levels) l.bytes = 1 << 20;
  analyze_ladder(levels, std::nullopt, 8);
  EXPECT_DOUBLE_EQ(levels[0].busbw_median_gbs, 100);
  EXPECT_DOUBLE_EQ(levels[0].busbw_min_gbs, 90);
  EXPECT_DOUBLE_EQ(*levels[0].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(levels[1].busbw_median_gbs, 45);
  EXPECT_DOUBLE_EQ(*levels[1].efficiency, 0.45);
  EXPECT_DOUBLE_EQ(*levels[2].efficiency, 1.0);  // its own op's baseline
  EXPECT_FALSE(levels[1].ceiling_gbs);           // no NIC rate known
}

TEST(Ladder, NicCeilingAndInflatedTwoNodeWarning) {
  // 8 GPUs per node, 8 x 400 Gb/s NICs: 50 GB/s per rank.
  EXPECT_DOUBLE_EQ(nic_ceiling_gbs(3200, 8), 50.0);
  std::vector<LevelResult> levels(3);
  levels[0].nodes_per_group = 1;
  levels[0].groups = {group(360)};
  levels[1].nodes_per_group = 2;
  levels[1].groups = {group(80)};  // NVLS/tree: above 50
  levels[2].nodes_per_group = 4;
  levels[2].groups = {group(45)};
  analyze_ladder(levels, 3200.0, 8);
  EXPECT_FALSE(levels[0].ceiling_gbs);  // one node does not cross the NICs
  EXPECT_DOUBLE_EQ(*levels[1].ceiling_gbs, 50.0);
  EXPECT_DOUBLE_EQ(*levels[1].ceiling_fraction, 1.6);
  EXPECT_NE(levels[1].warning.find("above the NIC-bound ceiling"), std::string::npos);
  EXPECT_DOUBLE_EQ(*levels[2].ceiling_fraction, 0.9);
  EXPECT_TRUE(levels[2].warning.empty());
}

TEST(Projection, StepTimeSpeedupAndEfficiency) {
  ProjectionInput in;
  in.grad_bytes = 1 << 30;
  in.compute_ms = 100;
  in.overlap = 0.5;
  // 30 ms of communication hides under 50 ms of compute.
  const ProjectionPoint hidden = project(in, 2, 16, 30);
  EXPECT_DOUBLE_EQ(hidden.step_ms, 100);
  EXPECT_DOUBLE_EQ(hidden.speedup, 16);
  EXPECT_DOUBLE_EQ(hidden.efficiency, 1.0);
  // 150 ms: 100 exposed.
  const ProjectionPoint exposed = project(in, 4, 32, 150);
  EXPECT_DOUBLE_EQ(exposed.step_ms, 200);
  EXPECT_DOUBLE_EQ(exposed.speedup, 16);
  EXPECT_DOUBLE_EQ(exposed.efficiency, 0.5);
}

TEST(Projection, FromMeasuredLevelsAllReduceOrSharded) {
  std::vector<LevelResult> levels;
  for (const Op op : {Op::allreduce, Op::reducescatter, Op::allgather}) {
    for (const int nodes : {1, 2}) {
      LevelResult l;
      l.op = op;
      l.nodes_per_group = nodes;
      l.bytes = 1000;
      GroupResult g;
      g.time_us = nodes * 10000.0;  // 10 ms per node
      l.groups = {g};
      levels.push_back(l);
    }
  }
  ProjectionInput in;
  in.grad_bytes = 1000;
  in.compute_ms = 40;
  const auto dp = project_levels(in, levels, 8);
  ASSERT_EQ(dp.size(), 2U);
  EXPECT_EQ(dp[1].nodes, 2);
  EXPECT_EQ(dp[1].gpus, 16);
  EXPECT_DOUBLE_EQ(dp[1].comm_ms, 20);
  EXPECT_DOUBLE_EQ(dp[1].step_ms, 60);
  in.sharded = true;
  const auto sharded = project_levels(in, levels, 8);
  ASSERT_EQ(sharded.size(), 2U);
  EXPECT_DOUBLE_EQ(sharded[1].comm_ms, 40);  // reduce-scatter + all-gather
}

}  // namespace
}  // namespace fabricbench
