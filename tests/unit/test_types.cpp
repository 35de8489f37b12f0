#include "fabricbench/core/types.hpp"

#include <gtest/gtest.h>

namespace fabricbench {
namespace {

// nccl-tests' factors, written out for n = 1..8 rather than recomputed.
TEST(BusBw, AllReduceFactorIsTwoNMinusOneOverN) {
  const double expected[] = {0.0, 1.0, 4.0 / 3, 1.5, 1.6, 10.0 / 6, 12.0 / 7, 1.75};
  for (int n = 1; n <= 8; ++n) EXPECT_DOUBLE_EQ(busbw_factor(Op::allreduce, n), expected[n - 1]) << "n=" << n;
}

TEST(BusBw, GatherScatterAllToAllFactorIsNMinusOneOverN) {
  const double expected[] = {0.0, 0.5, 2.0 / 3, 0.75, 0.8, 5.0 / 6, 6.0 / 7, 0.875};
  for (const Op op : {Op::allgather, Op::reducescatter, Op::alltoall})
    for (int n = 1; n <= 8; ++n) EXPECT_DOUBLE_EQ(busbw_factor(op, n), expected[n - 1]) << name(op) << " n=" << n;
}

TEST(BusBw, RootedAndPointToPointFactorIsOne) {
  for (const Op op : {Op::broadcast, Op::reduce, Op::sendrecv})
    for (int n = 1; n <= 8; ++n) EXPECT_DOUBLE_EQ(busbw_factor(op, n), 1.0) << name(op) << " n=" << n;
}

TEST(Names, RoundTripEveryOpAndDtype) {
  for (const Op op : all_ops()) EXPECT_EQ(parse_op(name(op)), op);
  for (const DType d : all_dtypes()) EXPECT_EQ(parse_dtype(name(d)), d);
  for (const RedOp r : {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg})
    EXPECT_EQ(parse_redop(name(r)), r);
}

TEST(Names, AcceptsNcclTestsSpellingsAndRejectsUnknown) {
  EXPECT_EQ(parse_dtype("float"), DType::float32);
  EXPECT_EQ(parse_dtype("FP16"), DType::half);
  EXPECT_EQ(parse_dtype("bf16"), DType::bfloat16);
  EXPECT_EQ(parse_dtype("e4m3"), DType::fp8e4m3);
  EXPECT_EQ(parse_dtype("float8e5m2"), DType::fp8e5m2);
  EXPECT_EQ(element_size(DType::fp8e4m3), 1U);
  EXPECT_TRUE(is_floating(DType::fp8e5m2));
  EXPECT_EQ(parse_op("AllReduce"), Op::allreduce);
  EXPECT_FALSE(parse_op("all_reduce"));
  EXPECT_FALSE(parse_dtype("float128"));
  EXPECT_FALSE(parse_redop("mean"));
}

TEST(Counts, WholeBufferOpsUseEveryElement) {
  const Counts c = counts_for(Op::allreduce, DType::float32, 1024, 3);
  EXPECT_EQ(c.param, 256U);
  EXPECT_EQ(c.send, 256U);
  EXPECT_EQ(c.recv, 256U);
  EXPECT_EQ(c.bytes, 1024U);
}

TEST(Counts, PerRankOpsRoundDownTo16BytesPerRankAsNcclTests) {
  // 1024 B of float on 3 ranks: 256 elements -> 85 per rank -> 84 (336 B, a
  // multiple of 16), 252 in all.
  const Counts ag = counts_for(Op::allgather, DType::float32, 1024, 3);
  EXPECT_EQ(ag.param, 84U);
  EXPECT_EQ(ag.send, 84U);
  EXPECT_EQ(ag.recv, 252U);
  EXPECT_EQ(ag.bytes, 1008U);
  const Counts rs = counts_for(Op::reducescatter, DType::float32, 1024, 3);
  EXPECT_EQ(rs.send, 252U);
  EXPECT_EQ(rs.recv, 84U);
  // 100 int8 on 4 ranks: 25 per rank -> 16.
  const Counts a2a = counts_for(Op::alltoall, DType::int8, 100, 4);
  EXPECT_EQ(a2a.param, 16U);
  EXPECT_EQ(a2a.send, 64U);
  EXPECT_EQ(a2a.recv, 64U);
  EXPECT_EQ(a2a.bytes, 64U);
}

TEST(Counts, PerRankSizesAgreeAcrossRankCountsAsNcclTests) {
  // nccl-tests: count = (bytes / elt / nranks) & ~(16 / elt - 1).
  for (const DType d : {DType::int8, DType::half, DType::float32, DType::float64}) {
    const std::size_t elt = element_size(d);
    for (const int n : {1, 2, 3, 6, 8, 12, 24})
      for (const std::size_t bytes : {std::size_t{1} << 20, std::size_t{64} << 20, std::size_t{1000000}}) {
        const std::size_t want = (bytes / elt / static_cast<std::size_t>(n)) & ~(16 / elt - 1);
        for (const Op op : {Op::allgather, Op::reducescatter, Op::alltoall}) {
          const Counts c = counts_for(op, d, bytes, n);
          EXPECT_EQ(c.param, want) << name(op) << ' ' << name(d) << ' ' << n << ' ' << bytes;
          EXPECT_EQ(c.param * elt % 16, 0U);
          EXPECT_EQ(c.bytes, want * static_cast<std::size_t>(n) * elt);
        }
      }
  }
  // Whole-buffer ops are not rounded (nccl-tests neither).
  EXPECT_EQ(counts_for(Op::allreduce, DType::float32, 1000, 6).param, 250U);
  EXPECT_EQ(counts_for(Op::sendrecv, DType::int8, 7, 6).param, 7U);
}

TEST(Counts, TooSmallForTheRanksGivesZero) {
  EXPECT_EQ(counts_for(Op::allgather, DType::float32, 8, 4).param, 0U);
  EXPECT_EQ(counts_for(Op::allgather, DType::float32, 60, 4).param, 0U);  // 15 B per rank
  EXPECT_EQ(counts_for(Op::allgather, DType::float32, 64, 4).param, 4U);
  EXPECT_EQ(counts_for(Op::allreduce, DType::float64, 8, 4).param, 1U);
}

}  // namespace
}  // namespace fabricbench
