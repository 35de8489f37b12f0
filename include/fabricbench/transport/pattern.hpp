#pragma once
// The data pattern that proves every operation moved and reduced the right
// bytes. Each rank's input element i is a small integer v(rank, i) chosen so
// that sums, products, minima and maxima over any rank count up to the limits
// below are exact in every element type (including half and bfloat16), and
// so that any misplaced chunk, wrong peer or stale buffer changes the value.
//
// The host functions here are the reference; the GPU kernels produce the
// same values.

#include <cstddef>
#include <cstdint>
#include <span>

#include "fabricbench/core/types.hpp"

namespace fabricbench::pattern {

// The integer value of rank `rank`'s input element `index`. Reducing ops get
// values whose reduction over `nranks` stays exact in `dtype` (products use
// +1/-1, or 1/2 for unsigned types with one 2 per index); other ops get values
// that tell ranks and positions apart.
std::int64_t input_value(Op op, RedOp redop, DType dtype, int rank, int nranks, std::size_t index);

// The integer every correct reduction over `nranks` ranks yields at `index`
// (avg: the exact mean, which the pattern keeps integral).
std::int64_t reduced_value(RedOp redop, DType dtype, int nranks, std::size_t index);

// The value receive buffers start with: outside every pattern's range.
std::int64_t garbage_value(DType dtype);

// Store / load one integer value as an element of `dtype` at `data[index]`.
void store(DType dtype, std::span<std::byte> data, std::size_t index, std::int64_t value);
std::int64_t load(DType dtype, std::span<const std::byte> data, std::size_t index, bool* exact);

// What a rank sends for a given operation (send.size() >= counts.send
// elements), and, for ops whose receive buffer is read as input in place, the
// garbage a receive buffer starts with (so a no-op never passes).
void fill_input(Op op, DType dtype, RedOp redop, int rank, int nranks, int root, const Counts& counts,
                std::span<std::byte> send);
void fill_garbage(DType dtype, std::span<std::byte> recv, std::size_t elements);

// Elements in the block the fill and the check encode once and then copy or
// compare whole: whole periods (pattern_values::period), about 4096 elements.
std::size_t reference_elements(std::size_t period);

// Number of wrong elements in this rank's output (recv, counts.recv elements)
// for the operation. Ranks that receive nothing (non-root ranks of reduce)
// return 0.
std::uint64_t count_wrong(Op op, DType dtype, RedOp redop, int rank, int nranks, int root, const Counts& counts,
                          std::span<const std::byte> recv);

}  // namespace fabricbench::pattern
