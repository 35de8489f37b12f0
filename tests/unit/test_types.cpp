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

TEST(Counts, PerRankOpsRoundDownToARankMultipleAsNcclTests) {
  // 1024 B of float on 3 ranks: 256 elements -> 85 per rank, 255 in all.
  const Counts ag = counts_for(Op::allgather, DType::float32, 1024, 3);
  EXPECT_EQ(ag.param, 85U);
  EXPECT_EQ(ag.send, 85U);
  EXPECT_EQ(ag.recv, 255U);
  EXPECT_EQ(ag.bytes, 1020U);
  const Counts rs = counts_for(Op::reducescatter, DType::float32, 1024, 3);
  EXPECT_EQ(rs.send, 255U);
  EXPECT_EQ(rs.recv, 85U);
  const Counts a2a = counts_for(Op::alltoall, DType::int8, 10, 4);
  EXPECT_EQ(a2a.param, 2U);
  EXPECT_EQ(a2a.send, 8U);
  EXPECT_EQ(a2a.recv, 8U);
  EXPECT_EQ(a2a.bytes, 8U);
}

TEST(Counts, TooSmallForTheRanksGivesZero) {
  EXPECT_EQ(counts_for(Op::allgather, DType::float32, 8, 4).param, 0U);
  EXPECT_EQ(counts_for(Op::allreduce, DType::float64, 8, 4).param, 1U);
}

}  // namespace
}  // namespace fabricbench
