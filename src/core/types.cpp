#include "fabricbench/core/types.hpp"

#include <array>
#include <string>
#include <utility>

#include "fabricbench/core/text.hpp"

namespace fabricbench {
namespace {

template <typename Enum, std::size_t N>
std::optional<Enum> lookup(const std::array<std::pair<std::string_view, Enum>, N>& table, std::string_view text) {
  const std::string key = lower_ascii(text);
  for (const auto& [label, value] : table) {
    if (label == key) return value;
  }
  return std::nullopt;
}

constexpr std::array<std::pair<std::string_view, Op>, 7> op_names{{
    {"allreduce", Op::allreduce},
    {"allgather", Op::allgather},
    {"reducescatter", Op::reducescatter},
    {"broadcast", Op::broadcast},
    {"reduce", Op::reduce},
    {"alltoall", Op::alltoall},
    {"sendrecv", Op::sendrecv},
}};

// Canonical names first; nccl-tests' spellings accepted too.
constexpr std::array<std::pair<std::string_view, DType>, 25> dtype_names{{
    {"int8", DType::int8},          {"uint8", DType::uint8},        {"int32", DType::int32},
    {"int64", DType::int64},        {"half", DType::half},          {"bfloat16", DType::bfloat16},
    {"float", DType::float32},      {"double", DType::float64},     {"fp8e4m3", DType::fp8e4m3},
    {"fp8e5m2", DType::fp8e5m2},    {"e4m3", DType::fp8e4m3},       {"e5m2", DType::fp8e5m2},
    {"float8e4m3", DType::fp8e4m3}, {"float8e5m2", DType::fp8e5m2}, {"char", DType::int8},
    {"int", DType::int32},          {"uint8_t", DType::uint8},      {"float16", DType::half},
    {"fp16", DType::half},          {"bf16", DType::bfloat16},      {"float32", DType::float32},
    {"fp32", DType::float32},       {"float64", DType::float64},    {"fp64", DType::float64},
    {"int64_t", DType::int64},
}};

constexpr std::array<std::pair<std::string_view, RedOp>, 5> redop_names{{
    {"sum", RedOp::sum},
    {"prod", RedOp::prod},
    {"min", RedOp::min},
    {"max", RedOp::max},
    {"avg", RedOp::avg},
}};

constexpr std::array<std::pair<std::string_view, P2PTest>, 3> p2p_test_names{{
    {"latency", P2PTest::latency},
    {"bw", P2PTest::bandwidth},
    {"bibw", P2PTest::bibandwidth},
}};

}  // namespace

std::string_view name(Op op) {
  for (const auto& [label, value] : op_names) {
    if (value == op) return label;
  }
  return "?";
}

std::string_view name(DType dtype) {
  for (const auto& [label, value] : dtype_names) {
    if (value == dtype) return label;  // the first entry of each is canonical
  }
  return "?";
}

std::string_view name(RedOp redop) {
  for (const auto& [label, value] : redop_names) {
    if (value == redop) return label;
  }
  return "?";
}

std::string_view name(P2PTest test) {
  for (const auto& [label, value] : p2p_test_names) {
    if (value == test) return label;
  }
  return "?";
}

std::string_view name(Placement placement) { return placement == Placement::in_place ? "in_place" : "out_of_place"; }

std::optional<Op> parse_op(std::string_view text) { return lookup(op_names, text); }
std::optional<DType> parse_dtype(std::string_view text) { return lookup(dtype_names, text); }
std::optional<RedOp> parse_redop(std::string_view text) { return lookup(redop_names, text); }
std::optional<P2PTest> parse_p2p_test(std::string_view text) { return lookup(p2p_test_names, text); }

const std::vector<Op>& all_ops() {
  static const std::vector<Op> ops{Op::allreduce, Op::allgather, Op::reducescatter, Op::broadcast,
                                   Op::reduce,    Op::alltoall,  Op::sendrecv};
  return ops;
}

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> dtypes{DType::int8,    DType::uint8,    DType::int32,   DType::int64,
                                         DType::half,    DType::bfloat16, DType::float32, DType::float64,
                                         DType::fp8e4m3, DType::fp8e5m2};
  return dtypes;
}

const std::vector<RedOp>& all_redops() {
  static const std::vector<RedOp> redops{RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg};
  return redops;
}

const std::vector<P2PTest>& all_p2p_tests() {
  static const std::vector<P2PTest> tests{P2PTest::latency, P2PTest::bandwidth, P2PTest::bibandwidth};
  return tests;
}

std::size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::int8:
    case DType::uint8:
    case DType::fp8e4m3:
    case DType::fp8e5m2:
      return 1;
    case DType::half:
    case DType::bfloat16:
      return 2;
    case DType::int32:
    case DType::float32:
      return 4;
    case DType::int64:
    case DType::float64:
      return 8;
  }
  return 1;
}

bool is_floating(DType dtype) {
  return dtype == DType::half || dtype == DType::bfloat16 || dtype == DType::float32 || dtype == DType::float64 ||
         dtype == DType::fp8e4m3 || dtype == DType::fp8e5m2;
}

bool is_signed(DType dtype) { return dtype != DType::uint8; }

bool reduces(Op op) { return op == Op::allreduce || op == Op::reducescatter || op == Op::reduce; }

bool has_root(Op op) { return op == Op::broadcast || op == Op::reduce; }

bool splits_per_rank(Op op) { return op == Op::allgather || op == Op::reducescatter || op == Op::alltoall; }

double busbw_factor(Op op, int nranks) {
  const double n = nranks;
  switch (op) {
    case Op::allreduce:
      return 2.0 * (n - 1.0) / n;
    case Op::allgather:
    case Op::reducescatter:
    case Op::alltoall:
      return (n - 1.0) / n;
    case Op::broadcast:
    case Op::reduce:
    case Op::sendrecv:
      return 1.0;
  }
  return 1.0;
}

Counts counts_for(Op op, DType dtype, std::size_t bytes, int nranks) {
  const std::size_t elt = element_size(dtype);
  const std::size_t count = bytes / elt;
  const auto n = static_cast<std::size_t>(nranks);
  // Per-rank counts are rounded down to whole 16-byte units, as nccl-tests'
  // GetCollByteCount does for all-gather, reduce-scatter and all-to-all: the
  // sizes then compare with nccl-tests' at any rank count (6, 12, 24).
  const std::size_t per_rank = count / n / (per_rank_align_bytes / elt) * (per_rank_align_bytes / elt);
  Counts c;
  switch (op) {
    case Op::allgather:
      c.param = per_rank;
      c.send = c.param;
      c.recv = c.param * n;
      break;
    case Op::reducescatter:
      c.param = per_rank;
      c.send = c.param * n;
      c.recv = c.param;
      break;
    case Op::alltoall:
      c.param = per_rank;
      c.send = c.param * n;
      c.recv = c.param * n;
      break;
    default:
      c.param = count;
      c.send = count;
      c.recv = count;
      break;
  }
  c.bytes = (splits_per_rank(op) ? c.param * n : c.param) * elt;
  return c;
}

}  // namespace fabricbench
