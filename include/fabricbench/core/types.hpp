#pragma once
// The vocabulary of a sweep: operations, element types, reductions and
// placements, with their names on the command line and in result files, and
// the bus-bandwidth factors of nccl-tests so figures compare.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/core/field_list.hpp"

namespace fabricbench {

enum class Op { allreduce, allgather, reducescatter, broadcast, reduce, alltoall, sendrecv };
// fp8e4m3 and fp8e5m2 are the OCP 8-bit floats (4 exponent bits and 3 of
// mantissa, or 5 and 2), which NCCL reduces on GPUs of compute capability 9.0
// and newer.
enum class DType { int8, uint8, int32, int64, half, bfloat16, float32, float64, fp8e4m3, fp8e5m2 };
enum class RedOp { sum, prod, min, max, avg };
enum class Placement { out_of_place, in_place };
// The point-to-point tests of the OSU micro-benchmarks, between two ranks:
// latency (ping-pong, half the round trip, osu_latency), bandwidth (a window
// of messages one way, osu_bw) and bidirectional bandwidth (windows both
// ways at once, osu_bibw).
enum class P2PTest { latency, bandwidth, bibandwidth };

std::string_view name(Op op);
std::string_view name(DType dtype);
std::string_view name(RedOp redop);
std::string_view name(Placement placement);
std::string_view name(P2PTest test);

// Parse a command-line or JSON name; nullopt when unknown. DType accepts the
// nccl-tests aliases too (float, double, int, char, bf16, fp16...).
std::optional<Op> parse_op(std::string_view text);
std::optional<DType> parse_dtype(std::string_view text);
std::optional<RedOp> parse_redop(std::string_view text);
std::optional<P2PTest> parse_p2p_test(std::string_view text);

const std::vector<Op>& all_ops();
const std::vector<DType>& all_dtypes();
const std::vector<RedOp>& all_redops();
const std::vector<P2PTest>& all_p2p_tests();

std::size_t element_size(DType dtype);
bool is_floating(DType dtype);
bool is_signed(DType dtype);

// Whether the operation combines values with a reduction operator.
bool reduces(Op op);
// Whether the operation uses a root rank.
bool has_root(Op op);
// Whether a buffer of S bytes is split into one chunk per rank (all-gather,
// reduce-scatter, all-to-all): its element count is rounded down to a
// multiple of the rank count, as nccl-tests does.
bool splits_per_rank(Op op);

// busbw / algbw for n ranks, exactly nccl-tests': all-reduce 2(n-1)/n;
// all-gather, reduce-scatter, all-to-all (n-1)/n; broadcast, reduce and
// send/recv 1. n = 1 gives 0 for the former (no data crosses a link), never a
// division by zero.
double busbw_factor(Op op, int nranks);

// The element counts of one sweep point on one rank, as nccl-tests defines
// them: `param` is the count passed to the collective (per rank for all-gather,
// reduce-scatter and all-to-all; the "count" column), `send` and `recv` the
// elements each rank sends and receives, and `bytes` the reported size S.
struct Counts {
  std::size_t param = 0;
  std::size_t send = 0;
  std::size_t recv = 0;
  std::size_t bytes = 0;
};

// Per-rank element counts (all-gather, reduce-scatter, all-to-all) are
// whole multiples of this many bytes, as in nccl-tests.
inline constexpr std::size_t per_rank_align_bytes = 16;

// Counts for a buffer of `bytes` bytes on `nranks` ranks. `bytes` must be a
// multiple of the element size (the CLI checks); per-rank ops round down to
// per_rank_align_bytes per rank.
Counts counts_for(Op op, DType dtype, std::size_t bytes, int nranks);

// ---- field lists (core/field_list.hpp) ------------------------------------

inline std::optional<Op> from_name(std::string_view text, fields::tag<Op>) { return parse_op(text); }

inline std::optional<DType> from_name(std::string_view text, fields::tag<DType>) {
  // Only the names this build writes: an alias ("double") is command-line spelling.
  const std::optional<DType> d = parse_dtype(text);
  return d && name(*d) == text ? d : std::nullopt;
}

inline std::optional<RedOp> from_name(std::string_view text, fields::tag<RedOp>) { return parse_redop(text); }

inline std::optional<Placement> from_name(std::string_view text, fields::tag<Placement>) {
  for (const Placement p : {Placement::out_of_place, Placement::in_place})
    if (text == name(p)) return p;
  return std::nullopt;
}

inline std::optional<P2PTest> from_name(std::string_view text, fields::tag<P2PTest>) {
  // Only the names this build writes.
  const std::optional<P2PTest> t = parse_p2p_test(text);
  return t && name(*t) == text ? t : std::nullopt;
}

}  // namespace fabricbench
