#pragma once
// The data pattern's values as plain integer arithmetic that compiles for the
// host and the device alike: the one definition of what every rank sends and
// what every correct result holds. src/transport/pattern.cpp builds the host fill and
// check on it; the fill and verify kernels use it directly.

#include <cstddef>
#include <cstdint>

#include "fabricbench/core/types.hpp"

#if defined(__CUDACC__)
#define FB_HD __host__ __device__
#else
#define FB_HD
#endif

namespace fabricbench::pattern_values {

// What a kernel needs to know about one operation on one rank.
struct Params {
  Op op = Op::allreduce;
  DType dtype = DType::float32;
  RedOp redop = RedOp::sum;
  int rank = 0;
  int nranks = 1;
  int root = 0;
  std::size_t param = 0;  // Counts::param
  std::size_t send = 0;   // Counts::send
  std::size_t recv = 0;   // Counts::recv
};

FB_HD inline bool signed_type(DType d) { return !(d == DType::uint8); }

FB_HD inline bool reducing(Op op) { return op == Op::allreduce || op == Op::reducescatter || op == Op::reduce; }

FB_HD inline bool floating(DType d) {
  return d == DType::half || d == DType::bfloat16 || d == DType::float32 || d == DType::float64 ||
         d == DType::fp8e4m3 || d == DType::fp8e5m2;
}

FB_HD inline std::int64_t exact_cap(DType d) {
  switch (d) {
    case DType::int8:
      return 127;
    case DType::uint8:
      return 255;
    case DType::half:
      return 2048;
    case DType::bfloat16:
      return 256;
    case DType::float32:
      return std::int64_t{1} << 24;
    case DType::float64:
      return std::int64_t{1} << 53;
    case DType::int32:
      return 2147483647;
    case DType::int64:
      return std::int64_t{1} << 62;
    case DType::fp8e4m3:
      return 16;
    case DType::fp8e5m2:
      return 8;
  }
  return 127;
}

// Position-telling patterns span +-50, or what fp8 holds exactly.
FB_HD inline std::int64_t spread(DType d, std::uint64_t h) {
  std::uint64_t span = 50;
  if (d == DType::fp8e4m3) span = 16;
  if (d == DType::fp8e5m2) span = 8;
  const auto v = static_cast<std::int64_t>(h % (2 * span + 1));
  return signed_type(d) ? v - static_cast<std::int64_t>(span) : v;
}

FB_HD inline std::int64_t input(Op op, RedOp redop, DType dtype, int rank, int nranks, std::size_t index) {
  const bool sign = signed_type(dtype);
  if (!reducing(op)) {
    const std::uint64_t h =
        (static_cast<std::uint64_t>(rank) * 31U + static_cast<std::uint64_t>(index % 101) * 7U) % 101U;
    return spread(dtype, h);
  }
  const std::uint64_t h = static_cast<std::uint64_t>(rank) * 7U + static_cast<std::uint64_t>(index) * 13U;
  const std::int64_t cap = exact_cap(dtype);
  const std::int64_t n = nranks;
  const auto nr = static_cast<std::size_t>(nranks);
  switch (redop) {
    case RedOp::sum:
      if (2 * n <= cap) return sign ? static_cast<std::int64_t>(h % 5) - 2 : static_cast<std::int64_t>(h % 3);
      if (n <= cap) return sign ? static_cast<std::int64_t>(h % 3) - 1 : static_cast<std::int64_t>(h % 2);
      return static_cast<std::size_t>(rank) == index % nr ? 1 : 0;
    case RedOp::prod:
      if (sign) return h % 3 == 0 ? -1 : 1;
      return (static_cast<std::size_t>(rank) == index % nr && (index / nr) % 2 == 0) ? 2 : 1;
    case RedOp::min:
    case RedOp::max:
      return spread(dtype, h % 101);
    case RedOp::avg: {
      const auto b = static_cast<std::int64_t>((index * 13U) % 5U);
      const std::int64_t base = sign ? b - 2 : (b % 3) + 1;
      std::int64_t offset = rank % 2 == 0 ? 1 : -1;
      if (nranks % 2 == 1 && rank == nranks - 1) offset = 0;
      return base + offset;
    }
  }
  return 0;
}

// The rank-dependent part of a reducing input is g((7 * rank + c) mod m) for
// an m that 7 does not divide: over any m consecutive ranks it takes every
// residue once, so a reduction over n ranks is n / m whole cycles and a
// partial one of n mod m ranks. That keeps every expected value O(1) in the
// rank count (O(min(n, 101)) for min and max), on the host and in the verify
// kernel alike.
FB_HD inline std::uint64_t residue_of_index(std::size_t index, std::uint64_t m) {
  return (static_cast<std::uint64_t>(index) * 13U) % m;
}

FB_HD inline std::int64_t reduced(RedOp redop, DType dtype, int nranks, std::size_t index) {
  const bool sign = signed_type(dtype);
  const std::int64_t n = nranks;
  switch (redop) {
    case RedOp::sum: {
      const std::int64_t cap = exact_cap(dtype);
      if (n > cap) return 1;  // exactly one rank holds a 1 at each index
      // input: sign ? h % 5 - 2 : h % 3 (2n <= cap), else sign ? h % 3 - 1 : h % 2.
      const bool wide = 2 * n <= cap;
      const std::uint64_t m = wide ? (sign ? 5U : 3U) : (sign ? 3U : 2U);
      const std::int64_t shift = sign ? (wide ? 2 : 1) : 0;
      const std::uint64_t c = residue_of_index(index, m);
      // Sum over a whole cycle of (v - shift), v = 0..m-1.
      const auto whole = static_cast<std::int64_t>(m * (m - 1) / 2) - shift * static_cast<std::int64_t>(m);
      std::int64_t total = (n / static_cast<std::int64_t>(m)) * whole;
      for (std::int64_t r = 0; r < n % static_cast<std::int64_t>(m); ++r)
        total += static_cast<std::int64_t>((static_cast<std::uint64_t>(r) * 7U + c) % m) - shift;
      return total;
    }
    case RedOp::prod: {
      if (!sign) return (index / static_cast<std::size_t>(nranks)) % 2 == 0 ? 2 : 1;
      // -1 where h % 3 == 0: once per cycle of 3 ranks, plus the partial cycle.
      const std::uint64_t c = residue_of_index(index, 3U);
      std::int64_t negatives = n / 3;
      for (std::int64_t r = 0; r < n % 3; ++r)
        if ((static_cast<std::uint64_t>(r) * 7U + c) % 3U == 0) ++negatives;
      return negatives % 2 == 0 ? 1 : -1;
    }
    case RedOp::min:
    case RedOp::max: {
      // spread(h % 101): 101 or more ranks take every residue.
      const std::uint64_t c = residue_of_index(index, 101U);
      const std::int64_t ranks = n < 101 ? n : 101;
      std::int64_t best = spread(dtype, c % 101U);
      for (std::int64_t r = 1; r < ranks; ++r) {
        const std::int64_t v = spread(dtype, (static_cast<std::uint64_t>(r) * 7U + c) % 101U);
        if (redop == RedOp::min ? v < best : v > best) best = v;
      }
      return best;
    }
    case RedOp::avg: {
      const auto b = static_cast<std::int64_t>((index * 13U) % 5U);
      return sign ? b - 2 : (b % 3) + 1;
    }
  }
  return 0;
}

// The reduction as its definition reads, rank by rank: O(ranks) per value,
// for tests that pin reduced() to it.
FB_HD inline std::int64_t reduced_by_ranks(RedOp redop, DType dtype, int nranks, std::size_t index) {
  const Op op = Op::allreduce;
  std::int64_t acc = input(op, redop, dtype, 0, nranks, index);
  for (int r = 1; r < nranks; ++r) {
    const std::int64_t v = input(op, redop, dtype, r, nranks, index);
    if (redop == RedOp::sum) acc += v;
    if (redop == RedOp::prod) acc *= v;
    if (redop == RedOp::min && v < acc) acc = v;
    if (redop == RedOp::max && v > acc) acc = v;
  }
  if (redop == RedOp::avg) return reduced(redop, dtype, nranks, index);
  return acc;
}

// Every input and every expected output repeats in its index with this
// period (elements), for every rank: the host fill and check build one
// period and compare whole blocks against it.
FB_HD inline std::size_t period(Op op, RedOp redop, DType dtype, int nranks) {
  const auto nr = static_cast<std::size_t>(nranks < 1 ? 1 : nranks);
  if (!reducing(op)) return 101;
  switch (redop) {
    case RedOp::sum:
      return static_cast<std::int64_t>(nranks) <= exact_cap(dtype) ? 30 : nr;  // h % 5, 3 or 2; else index % n
    case RedOp::prod:
      return signed_type(dtype) ? 3 : 2 * nr;
    case RedOp::min:
    case RedOp::max:
      return 101;
    case RedOp::avg:
      return 5;
  }
  return 1;
}

FB_HD inline std::int64_t garbage(DType dtype) {
  if (dtype == DType::int8) return -127;
  if (dtype == DType::uint8) return 255;
  if (dtype == DType::fp8e4m3) return -448;
  if (dtype == DType::fp8e5m2) return -57344;
  return -30720;
}

// Elements of this rank's output that verify() reads.
FB_HD inline std::size_t output_elements(const Params& p) {
  if (p.op == Op::reduce && p.rank != p.root) return 0;
  if (p.op == Op::reducescatter) return p.param;
  return p.recv;
}

// The value output element `i` must hold after a correct operation.
FB_HD inline std::int64_t expected(const Params& p, std::size_t i) {
  switch (p.op) {
    case Op::allreduce:
    case Op::reduce:
      return reduced(p.redop, p.dtype, p.nranks, i);
    case Op::reducescatter:
      return reduced(p.redop, p.dtype, p.nranks, static_cast<std::size_t>(p.rank) * p.param + i);
    case Op::allgather:
      return input(p.op, p.redop, p.dtype, static_cast<int>(i / p.param), p.nranks, i % p.param);
    case Op::broadcast:
      return input(p.op, p.redop, p.dtype, p.root, p.nranks, i);
    case Op::alltoall:
      return input(p.op, p.redop, p.dtype, static_cast<int>(i / p.param), p.nranks,
                   static_cast<std::size_t>(p.rank) * p.param + i % p.param);
    case Op::sendrecv:
      return input(p.op, p.redop, p.dtype, (p.rank - 1 + p.nranks) % p.nranks, p.nranks, i);
  }
  return 0;
}

// A floating average is NCCL's pre-multiplied sum: exact only within a few
// ulps per rank (the same bound as pattern::count_wrong).
FB_HD inline bool approximate(const Params& p) { return reducing(p.op) && p.redop == RedOp::avg && floating(p.dtype); }

FB_HD inline double tolerance(const Params& p) {
  if (!approximate(p)) return 0.0;
  double eps = 2.220446049250313e-16;                           // 2^-52
  if (p.dtype == DType::half) eps = 9.765625e-04;               // 2^-10
  if (p.dtype == DType::bfloat16) eps = 7.8125e-03;             // 2^-7
  if (p.dtype == DType::float32) eps = 1.1920928955078125e-07;  // 2^-23
  if (p.dtype == DType::fp8e4m3) eps = 0.125;                   // 2^-3
  if (p.dtype == DType::fp8e5m2) eps = 0.25;                    // 2^-2
  return eps * 4.0 * static_cast<double>(p.nranks) * 4.0;
}

}  // namespace fabricbench::pattern_values
