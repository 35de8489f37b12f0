#include "fabricbench/transport/mpi/mpi_transport.hpp"

#include <gtest/gtest.h>

#include "fabricbench/transport/pattern.hpp"

namespace fabricbench {
namespace {

std::uint64_t wrong_everywhere(const Comm& world, std::uint64_t local) {
  world.allreduce_sum(std::span<std::uint64_t>(&local, 1));
  return local;
}

std::vector<DType> mpi_dtypes() {
  return {DType::int8, DType::uint8, DType::int32, DType::int64, DType::float32, DType::float64};
}

TEST(MpiTransport, EveryOpDtypeRedopAndPlacementIsCorrect) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  const int n = world.size();
  const int root = n - 1;  // not rank 0, so a root mix-up shows
  for (const Op op : all_ops()) {
    for (const DType dtype : mpi_dtypes()) {
      for (const RedOp redop : {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max}) {
        if (!reduces(op) && redop != RedOp::sum) continue;
        // Sizes whose element counts do not divide evenly by 3 or 4 ranks.
        for (const std::size_t elements : {std::size_t{1}, std::size_t{13}, std::size_t{1000}, std::size_t{65537}}) {
          const Counts counts = counts_for(op, dtype, elements * element_size(dtype), n);
          if (counts.param == 0) continue;
          for (const Placement placement : {Placement::out_of_place, Placement::in_place}) {
            const OpSpec spec{op, dtype, redop, placement, root, counts};
            transport.prepare(spec);
            transport.fill(spec);
            transport.run_once(spec);
            EXPECT_EQ(wrong_everywhere(world, transport.verify(spec)), 0U)
                << name(op) << " " << name(dtype) << " " << name(redop) << " " << name(placement)
                << " elements=" << elements << " ranks=" << n;
          }
        }
      }
    }
  }
}

TEST(MpiTransport, RepeatedBatchesThenFreshCheckStayCorrect) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  const Counts counts = counts_for(Op::allreduce, DType::float32, 4096, world.size());
  const OpSpec spec{Op::allreduce, DType::float32, RedOp::sum, Placement::in_place, 0, counts};
  transport.prepare(spec);
  transport.fill(spec);
  const BatchTiming t = transport.time_batch(spec, 10, true);
  EXPECT_EQ(t.per_iteration.size(), 10U);
  EXPECT_GT(t.seconds, 0.0);
  double sum = 0;
  for (double s : t.per_iteration) sum += s;
  EXPECT_NEAR(sum, t.seconds, 1e-9);
  const BatchTiming plain = transport.time_batch(spec, 10, false);
  EXPECT_TRUE(plain.per_iteration.empty());
  EXPECT_GT(plain.seconds, 0.0);
  transport.fill(spec);
  transport.run_once(spec);
  EXPECT_EQ(wrong_everywhere(world, transport.verify(spec)), 0U);
}

TEST(MpiTransport, ACorruptedBufferIsCaught) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  for (const Op op : all_ops()) {
    const Counts counts = counts_for(op, DType::int32, 400 * 4, world.size());
    const OpSpec spec{op, DType::int32, RedOp::sum, Placement::out_of_place, 0, counts};
    transport.prepare(spec);
    transport.fill(spec);
    transport.run_once(spec);
    // Rank 0 (the root of rooted ops) flips one element of its result.
    if (world.rank() == 0) {
      const std::span<std::byte> out = transport.output(spec);
      const std::int64_t v = pattern::load(DType::int32, out, 2, nullptr);
      pattern::store(DType::int32, out, 2, v + 1000);
    }
    EXPECT_EQ(wrong_everywhere(world, transport.verify(spec)), 1U) << name(op);
  }
}

TEST(MpiTransport, HalfPrecisionAndAvgAreRefusedWithAReason) {
  const Comm world = Comm::world();
  const MpiTransport transport(world);
  EXPECT_TRUE(transport.unsupported(Op::allreduce, DType::half, RedOp::sum));
  EXPECT_TRUE(transport.unsupported(Op::allgather, DType::bfloat16, RedOp::sum));
  EXPECT_TRUE(transport.unsupported(Op::allreduce, DType::float32, RedOp::avg));
  EXPECT_FALSE(transport.unsupported(Op::allgather, DType::float32, RedOp::avg));
  EXPECT_FALSE(transport.unsupported(Op::allreduce, DType::int8, RedOp::prod));
}

}  // namespace
}  // namespace fabricbench
