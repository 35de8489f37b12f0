#include "fabricbench/transport/pattern.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace fabricbench {
namespace {

using Bytes = std::vector<std::byte>;

// A reference model of every operation on the host: from all ranks' inputs
// (built with the real fill_input), the output rank `rank` must see. The
// reduction is done on the integer pattern values, so it is exact.
Bytes reference_output(Op op, DType dtype, RedOp redop, int rank, int n, int root, const Counts& c) {
  const std::size_t elt = element_size(dtype);
  std::vector<Bytes> in(static_cast<std::size_t>(n), Bytes(c.send * elt));
  for (int r = 0; r < n; ++r) pattern::fill_input(op, dtype, redop, r, n, root, c, in[static_cast<std::size_t>(r)]);
  const auto value = [&](int r, std::size_t i) {
    return pattern::load(dtype, in[static_cast<std::size_t>(r)], i, nullptr);
  };
  const auto reduce_at = [&](std::size_t i) {
    std::int64_t acc = value(0, i);
    for (int r = 1; r < n; ++r) {
      const std::int64_t v = value(r, i);
      switch (redop) {
        case RedOp::sum:
        case RedOp::avg:
          acc += v;
          break;
        case RedOp::prod:
          acc *= v;
          break;
        case RedOp::min:
          acc = std::min(acc, v);
          break;
        case RedOp::max:
          acc = std::max(acc, v);
          break;
      }
    }
    return redop == RedOp::avg ? acc / n : acc;
  };
  Bytes out(c.recv * elt);
  const std::size_t p = c.param;
  const auto ur = static_cast<std::size_t>(rank);
  switch (op) {
    case Op::allreduce:
    case Op::reduce:
      for (std::size_t i = 0; i < c.recv; ++i) pattern::store(dtype, out, i, reduce_at(i));
      break;
    case Op::reducescatter:
      for (std::size_t i = 0; i < p; ++i) pattern::store(dtype, out, i, reduce_at(ur * p + i));
      break;
    case Op::allgather:
      for (int s = 0; s < n; ++s)
        for (std::size_t i = 0; i < p; ++i)
          pattern::store(dtype, out, static_cast<std::size_t>(s) * p + i, value(s, i));
      break;
    case Op::alltoall:
      for (int s = 0; s < n; ++s)
        for (std::size_t i = 0; i < p; ++i)
          pattern::store(dtype, out, static_cast<std::size_t>(s) * p + i, value(s, ur * p + i));
      break;
    case Op::broadcast:
      for (std::size_t i = 0; i < c.recv; ++i) pattern::store(dtype, out, i, value(root, i));
      break;
    case Op::sendrecv:
      for (std::size_t i = 0; i < c.recv; ++i) pattern::store(dtype, out, i, value((rank - 1 + n) % n, i));
      break;
  }
  return out;
}

TEST(Pattern, StoreLoadRoundTripsInEveryDtype) {
  for (const DType d : all_dtypes()) {
    Bytes buf(16 * element_size(d));
    // fp8 holds every integer only up to 16 (e4m3) or 8 (e5m2).
    const bool fp8 = d == DType::fp8e4m3 || d == DType::fp8e5m2;
    const std::int64_t lo = fp8 ? (d == DType::fp8e4m3 ? -16 : -8) : is_signed(d) ? -100 : 0;
    const std::int64_t hi = fp8 ? -lo + 1 : lo + 16;
    for (std::int64_t v = lo; v < hi; ++v) {
      pattern::store(d, buf, 3, v);
      bool exact = false;
      EXPECT_EQ(pattern::load(d, buf, 3, &exact), v) << name(d);
      EXPECT_TRUE(exact);
    }
    pattern::store(d, buf, 0, pattern::garbage_value(d));
    EXPECT_EQ(pattern::load(d, buf, 0, nullptr), pattern::garbage_value(d)) << name(d);
  }
}

TEST(Pattern, Fp8CodesAreTheOcpOnes) {
  // Reference codes from the OCP 8-bit floating point specification.
  Bytes buf(1);
  const auto code = [&](DType d, std::int64_t v) {
    pattern::store(d, buf, 0, v);
    return static_cast<unsigned>(buf[0]);
  };
  EXPECT_EQ(code(DType::fp8e4m3, 1), 0x38U);     // 0.0111.000
  EXPECT_EQ(code(DType::fp8e4m3, -2), 0xC0U);    // 1.1000.000
  EXPECT_EQ(code(DType::fp8e4m3, 16), 0x58U);    // 0.1011.000
  EXPECT_EQ(code(DType::fp8e4m3, -448), 0xFEU);  // the largest magnitude
  EXPECT_EQ(code(DType::fp8e5m2, 1), 0x3CU);     // 0.01111.00
  EXPECT_EQ(code(DType::fp8e5m2, 3), 0x42U);     // 0.10000.10
  EXPECT_EQ(code(DType::fp8e5m2, -57344), 0xFBU);
  // NaN and infinity codes never read as a value.
  bool exact = true;
  buf[0] = std::byte{0x7F};
  pattern::load(DType::fp8e4m3, buf, 0, &exact);
  EXPECT_FALSE(exact);
  buf[0] = std::byte{0x7C};  // e5m2 +infinity
  pattern::load(DType::fp8e5m2, buf, 0, &exact);
  EXPECT_FALSE(exact);
  // 17 has no e4m3 code: it is stored as NaN, never as a neighbour.
  pattern::store(DType::fp8e4m3, buf, 0, 17);
  pattern::load(DType::fp8e4m3, buf, 0, &exact);
  EXPECT_FALSE(exact);
}

TEST(Pattern, ReferenceOutputsHaveNoWrongElements) {
  for (int n = 1; n <= 5; ++n) {
    for (const Op op : all_ops()) {
      for (const DType d : all_dtypes()) {
        for (const RedOp redop : {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg}) {
          if (!reduces(op) && redop != RedOp::sum) continue;
          const int root = n - 1;
          const Counts c = counts_for(op, d, 96 * element_size(d), n);
          for (int rank = 0; rank < n; ++rank) {
            const Bytes out = reference_output(op, d, redop, rank, n, root, c);
            EXPECT_EQ(pattern::count_wrong(op, d, redop, rank, n, root, c, out), 0U)
                << name(op) << " " << name(d) << " " << name(redop) << " n=" << n << " rank=" << rank;
          }
        }
      }
    }
  }
}

TEST(Pattern, EveryCorruptedElementIsCounted) {
  const int n = 3;
  for (const Op op : all_ops()) {
    for (const DType d : all_dtypes()) {
      const Counts c = counts_for(op, d, 60 * element_size(d), n);
      const int rank = 0;  // the root of rooted ops, so it checks its output
      Bytes out = reference_output(op, d, RedOp::sum, rank, n, 0, c);
      const std::int64_t good = pattern::load(d, out, 5, nullptr);
      pattern::store(d, out, 5, good + 1);
      pattern::store(d, out, c.recv - 1, pattern::garbage_value(d));
      EXPECT_EQ(pattern::count_wrong(op, d, RedOp::sum, rank, n, 0, c, out), 2U) << name(op) << " " << name(d);
    }
  }
}

TEST(Pattern, UntouchedReceiveBufferFailsEveryElement) {
  for (const Op op : all_ops()) {
    const Counts c = counts_for(op, DType::float32, 64, 2);
    Bytes out(c.recv * 4);
    pattern::fill_garbage(DType::float32, out, c.recv);
    EXPECT_EQ(pattern::count_wrong(op, DType::float32, RedOp::max, 0, 2, 0, c, out), c.recv) << name(op);
  }
}

TEST(Pattern, ChunksFromTheWrongRankAreCaught) {
  // All-gather with two chunks swapped: every element of both is wrong.
  const int n = 3;
  const Counts c = counts_for(Op::allgather, DType::int32, 3 * 40 * 4, n);
  Bytes out = reference_output(Op::allgather, DType::int32, RedOp::sum, 1, n, 0, c);
  Bytes swapped = out;
  std::copy(out.begin(), out.begin() + 160, swapped.begin() + 160);
  std::copy(out.begin() + 160, out.begin() + 320, swapped.begin());
  EXPECT_GE(pattern::count_wrong(Op::allgather, DType::int32, RedOp::sum, 1, n, 0, c, swapped), 70U);
}

TEST(Pattern, SumsStayExactForManyRanks) {
  // Partial sums in any order stay within the exactly representable range.
  for (const DType d : {DType::int8, DType::uint8, DType::half, DType::bfloat16, DType::fp8e4m3, DType::fp8e5m2}) {
    for (const int n : {2, 4, 8, 9, 16, 17, 63, 64, 127, 128, 200, 1000}) {
      std::int64_t cap = d == DType::int8 ? 127 : d == DType::uint8 ? 255 : d == DType::half ? 2048 : 256;
      if (d == DType::fp8e4m3) cap = 16;
      if (d == DType::fp8e5m2) cap = 8;
      for (std::size_t i = 0; i < 50; ++i) {
        std::int64_t positive = 0;
        std::int64_t negative = 0;
        for (int r = 0; r < n; ++r) {
          const std::int64_t v = pattern::input_value(Op::allreduce, RedOp::sum, d, r, n, i);
          (v > 0 ? positive : negative) += v;
        }
        if (n <= cap) {
          EXPECT_LE(positive, cap) << name(d) << " n=" << n;
          EXPECT_GE(negative, -cap) << name(d) << " n=" << n;
        }
      }
    }
  }
}

TEST(Pattern, FloatingAverageAllowsRoundingButNotWrongValues) {
  const int n = 3;
  const Counts c = counts_for(Op::allreduce, DType::float32, 64, n);
  Bytes out(c.recv * 4);
  for (std::size_t i = 0; i < c.recv; ++i) {
    // What pre-multiplying by 1/n and summing gives: off by an ulp or so.
    float v = 0;
    for (int r = 0; r < n; ++r)
      v += static_cast<float>(pattern::input_value(Op::allreduce, RedOp::avg, DType::float32, r, n, i)) * (1.0F / 3.0F);
    std::memcpy(out.data() + i * 4, &v, 4);
  }
  EXPECT_EQ(pattern::count_wrong(Op::allreduce, DType::float32, RedOp::avg, 0, n, 0, c, out), 0U);
  const float wrong = 7.5F;
  std::memcpy(out.data() + 8, &wrong, 4);
  EXPECT_EQ(pattern::count_wrong(Op::allreduce, DType::float32, RedOp::avg, 0, n, 0, c, out), 1U);
}

// The block-wise check counts exactly what an element-by-element reading
// counts: wrong elements scattered over many blocks, at block edges, in the
// partial last block and in every chunk of a chunked output.
TEST(Pattern, BlockwiseCheckCountsEveryWrongElementExactly) {
  for (const Op op : {Op::allreduce, Op::allgather, Op::alltoall, Op::reducescatter, Op::sendrecv})
    for (const DType d : {DType::int8, DType::int32, DType::float32, DType::float64})
      for (const int n : {2, 3}) {
        const int rank = n - 1;
        const Counts c = counts_for(op, d, 20011 * element_size(d) * static_cast<std::size_t>(n), n);
        Bytes out = reference_output(op, d, RedOp::sum, rank, n, 0, c);
        ASSERT_EQ(pattern::count_wrong(op, d, RedOp::sum, rank, n, 0, c, out), 0U) << name(op) << ' ' << name(d);
        const std::size_t elements = op == Op::reducescatter ? c.param : c.recv;
        const std::size_t block = pattern::reference_elements(30);
        std::vector<std::size_t> bad{0, 1, block - 1, block, block + 1, 3 * block + 5, elements - 1, elements / 2};
        if (op == Op::allgather || op == Op::alltoall) bad.push_back(c.param);  // the second chunk's first
        std::sort(bad.begin(), bad.end());
        bad.erase(std::unique(bad.begin(), bad.end()), bad.end());
        for (const std::size_t i : bad) pattern::store(d, out, i, pattern::garbage_value(d));
        EXPECT_EQ(pattern::count_wrong(op, d, RedOp::sum, rank, n, 0, c, out), bad.size())
            << name(op) << ' ' << name(d) << " n=" << n;
      }
}

// A fill writes only what the point uses: after a large point, a small one
// must not rewrite (and pay for) the whole buffer.
TEST(Pattern, FillsWriteOnlyTheElementsAsked) {
  const DType d = DType::float32;
  const Counts c = counts_for(Op::allreduce, d, 64 * element_size(d), 2);
  Bytes send(4096 * element_size(d), std::byte{0x5A});
  pattern::fill_input(Op::allreduce, d, RedOp::sum, 0, 2, 0, c, send);
  pattern::fill_garbage(d, send, 0);
  for (std::size_t b = c.send * element_size(d); b < send.size(); ++b) ASSERT_EQ(send[b], std::byte{0x5A}) << b;
  Bytes recv(9000 * element_size(d), std::byte{0x5A});
  pattern::fill_garbage(d, recv, 8193);
  for (std::size_t i = 0; i < 8193; ++i) ASSERT_EQ(pattern::load(d, recv, i, nullptr), pattern::garbage_value(d)) << i;
  for (std::size_t b = 8193 * element_size(d); b < recv.size(); ++b) ASSERT_EQ(recv[b], std::byte{0x5A}) << b;
}

}  // namespace
}  // namespace fabricbench
