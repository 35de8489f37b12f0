#include <gtest/gtest.h>

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
