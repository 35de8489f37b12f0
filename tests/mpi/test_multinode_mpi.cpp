#include <gtest/gtest.h>

#include "fabricbench/engine/gpu_ladder.hpp"
#include "fabricbench/engine/model_parallel.hpp"
#include "fabricbench/engine/multinode.hpp"
#include "fabricbench/transport/mpi/mpi_transport.hpp"

namespace fabricbench {
namespace {

RunConfig small_config() {
  RunConfig config;
  config.iterations.fixed_iters = 3;
  config.iterations.warmup = 1;
  config.scale.bytes = 64 * 1024;
  config.pairs.bytes = 64 * 1024;
  return config;
}

TEST(MultinodeMpi, PairMatrixWithinOneNodeCoversEveryLocalPair) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  const Layout layout = discover_layout(world);
  const PairsResult pairs = run_pairs(small_config(), transport, world, layout);
  if (world.rank() != 0) return;
  EXPECT_EQ(pairs.wrong, 0U);
  EXPECT_TRUE(pairs.rounds.empty());  // one node: no node pairs
  ASSERT_EQ(pairs.intra.size(), 1U);
  const PairMatrix& m = pairs.intra[0];
  ASSERT_EQ(m.size, world.size());
  for (int a = 0; a < m.size; ++a) {
    for (int b = 0; b < m.size; ++b) {
      if (a == b) {
        EXPECT_FALSE(m.bw(a, b));
        continue;
      }
      ASSERT_TRUE(m.bw(a, b)) << a << "," << b;
      EXPECT_GT(*m.bw(a, b), 0.0);
      EXPECT_EQ(*m.bw(a, b), *m.bw(b, a));
      ASSERT_TRUE(m.lat(a, b));
    }
  }
}

TEST(MultinodeMpi, LadderOnOneNodeIsItsOwnBaseline) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  const Layout layout = discover_layout(world);
  RunConfig config = small_config();
  config.scale.grad_bytes = 32 * 1024;
  config.scale.compute_ms = 10;
  const ScaleResult scaling = run_ladder(config, transport, world, layout);
  if (world.rank() != 0) return;
  ASSERT_EQ(scaling.levels.size(), 3U);  // allreduce and allgather at 64 KiB, allreduce at 32 KiB
  for (const LevelResult& l : scaling.levels) {
    EXPECT_EQ(l.nodes_per_group, 1);
    ASSERT_EQ(l.groups.size(), 1U);
    EXPECT_EQ(l.groups[0].ranks, world.size());
    EXPECT_EQ(l.groups[0].wrong, 0U);
    if (l.busbw_median_gbs > 0) {
      ASSERT_TRUE(l.efficiency);
      EXPECT_DOUBLE_EQ(*l.efficiency, 1.0);
    } else {
      EXPECT_FALSE(l.efficiency);  // one rank moves nothing: no baseline, no ratio
    }
  }
  ASSERT_EQ(scaling.projection.size(), 1U);
  EXPECT_EQ(scaling.projection[0].gpus, world.size());
}

// Tensor parallel on one node: every group of tp local ranks measures the
// all-reduce at the activation size at once; rank 0 projects from the median.
TEST(MultinodeMpi, TensorParallelGroupsMeasureTheActivationAllReduce) {
  const Comm world = Comm::world();
  if (world.size() < 2) GTEST_SKIP() << "tensor parallel needs 2 or more ranks";
  MpiTransport transport(world);
  const Layout layout = discover_layout(world);
  std::vector<int> tps{world.size()};
  if (world.size() % 2 == 0 && world.size() > 2) tps.push_back(2);
  for (const int tp : tps) {
    RunConfig config = small_config();
    config.scale.compute_ms = 10;
    config.model.tp = tp;
    config.model.hidden = 64;
    config.model.seq = 16;
    config.model.micro_batch = 2;
    config.model.layers = 4;
    const ModelParallelResult mp = run_model_parallel(config, transport, world, layout, nullptr);
    if (world.rank() != 0) continue;
    EXPECT_EQ(mp.tp, tp);
    EXPECT_EQ(mp.dp, world.size() / tp);
    EXPECT_EQ(mp.activation_bytes, 64U * 16 * 2 * 2);
    ASSERT_TRUE(mp.tp_allreduce);
    EXPECT_EQ(mp.tp_allreduce->groups, world.size() / tp);
    EXPECT_EQ(mp.tp_allreduce->ranks, tp);
    EXPECT_EQ(mp.tp_allreduce->dtype, DType::float32);  // the mpi transport has no bfloat16
    EXPECT_EQ(mp.tp_allreduce->bytes, mp.activation_bytes);
    EXPECT_EQ(mp.tp_allreduce->wrong, 0U);
    EXPECT_GT(mp.tp_allreduce->time_us, 0.0);
    EXPECT_GE(mp.tp_allreduce->time_max_us, mp.tp_allreduce->time_us);
    EXPECT_FALSE(mp.pp_link);
    ASSERT_TRUE(mp.projection) << mp.skipped;
    EXPECT_DOUBLE_EQ(mp.projection->tp_comm_ms, 4 * 4 * mp.tp_allreduce->time_us / 1e3);
    EXPECT_DOUBLE_EQ(mp.projection->step_ms, 10.0 / tp + mp.projection->tp_comm_ms);
  }
}

// Local ranks stand in for the GPUs of one node. Without a link matrix the
// sets are the first k ranks, and the result says so.
TEST(MultinodeMpi, GpuLadderInRankOrderWithoutATopology) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  const Layout layout = discover_layout(world);
  RunConfig config = small_config();
  config.scale.grad_bytes = 32 * 1024;
  config.scale.compute_ms = 10;
  config.scale.steps = 100;
  config.report.price_per_gpu_hour = 2.0;
  const GpuLadderResult g = run_gpu_ladder(config, transport, world, layout, {LinkMatrix{}});
  if (world.rank() != 0) return;
  const std::vector<int> sizes = gpu_ladder_sizes(world.size(), {});
  EXPECT_EQ(g.gpus_per_node, world.size());
  EXPECT_FALSE(g.from_topology);
  EXPECT_NE(g.note.find("rank order"), std::string::npos);
  ASSERT_EQ(g.levels.size(), sizes.size() * 3);  // allreduce, allgather at 64 KiB; allreduce at 32 KiB
  for (std::size_t i = 0; i < g.levels.size(); ++i) {
    const GpuLevelResult& l = g.levels[i];
    EXPECT_EQ(l.gpus, sizes[i / 3]);
    EXPECT_EQ(l.choice, GpuSetChoice::rank_order);
    ASSERT_EQ(l.sets.size(), 1U);
    std::vector<int> first(static_cast<std::size_t>(l.gpus));
    for (int r = 0; r < l.gpus; ++r) first[static_cast<std::size_t>(r)] = r;
    EXPECT_EQ(l.sets[0].gpus, first);
    EXPECT_EQ(l.sets[0].wrong, 0U);
    EXPECT_GT(l.sets[0].busbw_gbs, 0.0);
    EXPECT_GT(l.sets[0].time_us, 0.0);
  }
  ASSERT_EQ(g.projection.size(), sizes.size() + 1);
  EXPECT_EQ(g.projection[0].gpus, 1);
  EXPECT_DOUBLE_EQ(g.projection[0].step_ms, 10.0);
  for (const GpuProjectionPoint& p : g.projection) {
    ASSERT_TRUE(p.cost_per_job);
    EXPECT_DOUBLE_EQ(*p.job_hours, 100 * p.step_ms / 3.6e6);
    EXPECT_DOUBLE_EQ(*p.cost_per_job, *p.job_hours * p.gpus * 2.0);
  }
  EXPECT_TRUE(g.cheapest_gpus);
  EXPECT_TRUE(g.fastest_gpus);
}

// Four local ranks as a recorded PCIe server (GPUs 0,1 and 2,3 under two
// switches on two sockets): the closest pair, the spread pair, the node.
TEST(MultinodeMpi, GpuLadderClosestAndSpreadFromARecordedMatrix) {
  const Comm world = Comm::world();
  if (world.size() != 4) GTEST_SKIP() << "needs 4 ranks";
  MpiTransport transport(world);
  const Layout layout = discover_layout(world);
  RunConfig config = small_config();
  config.scale.ops = {Op::allreduce};
  const LinkMatrix pcie{
      {"X", "PIX", "SYS", "SYS"}, {"PIX", "X", "SYS", "SYS"}, {"SYS", "SYS", "X", "PIX"}, {"SYS", "SYS", "PIX", "X"}};
  const GpuLadderResult g = run_gpu_ladder(config, transport, world, layout, {pcie});
  if (world.rank() != 0) return;
  EXPECT_TRUE(g.from_topology);
  ASSERT_EQ(g.levels.size(), 3U);
  EXPECT_EQ(gpu_level_label(g.levels[0].gpus, g.levels[0].choice), "2 GPUs closest");
  EXPECT_EQ(g.levels[0].sets.at(0).gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(g.levels[0].path, "PIX");
  EXPECT_EQ(gpu_level_label(g.levels[1].gpus, g.levels[1].choice), "2 GPUs spread");
  EXPECT_EQ(g.levels[1].sets.at(0).gpus, (std::vector<int>{0, 2}));
  EXPECT_EQ(g.levels[1].path, "SYS");
  EXPECT_EQ(gpu_level_label(g.levels[2].gpus, g.levels[2].choice), "4 GPUs any");
  EXPECT_EQ(g.levels[2].path, "SYS");
  for (const GpuLevelResult& l : g.levels) {
    EXPECT_EQ(l.sets.at(0).wrong, 0U);
    EXPECT_GT(l.busbw_median_gbs, 0.0);
    ASSERT_TRUE(l.efficiency);
  }
  EXPECT_DOUBLE_EQ(*g.levels[0].efficiency, 1.0);
  EXPECT_FALSE(g.projection_input);
}

TEST(MultinodeMpi, LadderBytesRespectTheMemoryCap) {
  ScaleConfig scale;
  scale.bytes = std::size_t{1} << 30;
  scale.mem_cap = 100 << 20;  // 100 MiB: two buffers of 32 MiB fit, of 64 do not
  EXPECT_EQ(ladder_bytes(scale), std::size_t{32} << 20);
  scale.bytes = 1000;
  EXPECT_EQ(ladder_bytes(scale), 1000U);
}

}  // namespace
}  // namespace fabricbench
