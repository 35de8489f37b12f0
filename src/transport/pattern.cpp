#include "fabricbench/transport/pattern.hpp"

#include "fabricbench/transport/pattern_values.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace fabricbench::pattern {
namespace {

std::uint16_t float_to_half_bits(float value) {
  const auto f = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (f >> 16) & 0x8000U;
  const std::int32_t exp = static_cast<std::int32_t>((f >> 23) & 0xFFU) - 127 + 15;
  std::uint32_t mant = f & 0x7FFFFFU;
  if (((f >> 23) & 0xFFU) == 0xFFU) return static_cast<std::uint16_t>(sign | 0x7C00U | (mant != 0 ? 0x200U : 0U));
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7C00U);
  if (exp <= 0) {
    if (exp < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000U;
    const auto shift = static_cast<std::uint32_t>(14 - exp);
    std::uint32_t half = mant >> shift;
    const std::uint32_t rest = mant & ((1U << shift) - 1U);
    const std::uint32_t halfway = 1U << (shift - 1U);
    if (rest > halfway || (rest == halfway && (half & 1U) != 0)) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = sign | (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  const std::uint32_t rest = mant & 0x1FFFU;
  if (rest > 0x1000U || (rest == 0x1000U && (half & 1U) != 0)) ++half;
  return static_cast<std::uint16_t>(half);
}

float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000U) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1FU;
  const std::uint32_t mant = h & 0x3FFU;
  if (exp == 0) {
    const float m = std::ldexp(static_cast<float>(mant), -24);
    return sign != 0 ? -m : m;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7F800000U | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112U) << 23) | (mant << 13));
}

std::uint16_t float_to_bf16_bits(float value) {
  const auto f = std::bit_cast<std::uint32_t>(value);
  if ((f & 0x7FFFFFFFU) > 0x7F800000U) return static_cast<std::uint16_t>((f >> 16) | 0x40U);
  const std::uint32_t rounding = 0x7FFFU + ((f >> 16) & 1U);
  return static_cast<std::uint16_t>((f + rounding) >> 16);
}

float bf16_bits_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

// OCP fp8: e4m3 (bias 7, no infinities, S.1111.111 is NaN) and e5m2 (bias 15,
// IEEE-like). Values here are exact by construction, so encoding only has to
// find the code of an exactly representable value.
struct Fp8Format {
  int mantissa_bits;
  int bias;
  bool has_infinity;
};

constexpr Fp8Format fp8_format(DType dtype) {
  return dtype == DType::fp8e4m3 ? Fp8Format{3, 7, false} : Fp8Format{2, 15, true};
}

double fp8_decode(std::uint8_t code, Fp8Format f) {
  const bool negative = (code & 0x80U) != 0;
  const int exponent_bits = 7 - f.mantissa_bits;
  const auto exponent = static_cast<int>((code >> f.mantissa_bits) & ((1U << exponent_bits) - 1U));
  const auto mantissa = static_cast<int>(code & ((1U << f.mantissa_bits) - 1U));
  const int max_exponent = (1 << exponent_bits) - 1;
  double value = 0;
  if (f.has_infinity && exponent == max_exponent) {
    value = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!f.has_infinity && exponent == max_exponent && mantissa == (1 << f.mantissa_bits) - 1) {
    value = std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    value = std::ldexp(mantissa, 1 - f.bias - f.mantissa_bits);
  } else {
    value = std::ldexp(mantissa + (1 << f.mantissa_bits), exponent - f.bias - f.mantissa_bits);
  }
  return negative ? -value : value;
}

std::uint8_t fp8_encode(double value, Fp8Format f) {
  // 256 codes: the exact one is found by a search, which only runs for
  // values outside the small integers that the table below covers.
  for (unsigned code = 0; code < 256; ++code) {
    if (fp8_decode(static_cast<std::uint8_t>(code), f) == value) return static_cast<std::uint8_t>(code);
  }
  return 0x7F;  // not representable: NaN in both formats
}

// Codes of the integers -64..64, the range every fp8 pattern value is in.
std::uint8_t fp8_code(std::int64_t value, DType dtype) {
  struct Table {
    std::array<std::uint8_t, 129> codes{};
    explicit Table(Fp8Format f) {
      for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = fp8_encode(static_cast<double>(i) - 64.0, f);
    }
  };
  static const Table e4m3(fp8_format(DType::fp8e4m3));
  static const Table e5m2(fp8_format(DType::fp8e5m2));
  if (value >= -64 && value <= 64)
    return (dtype == DType::fp8e4m3 ? e4m3 : e5m2).codes[static_cast<std::size_t>(value + 64)];
  return fp8_encode(static_cast<double>(value), fp8_format(dtype));
}

template <typename T>
void put(std::span<std::byte> data, std::size_t index, T value) {
  std::memcpy(data.data() + index * sizeof(T), &value, sizeof(T));
}

template <typename T>
T get(std::span<const std::byte> data, std::size_t index) {
  T value;
  std::memcpy(&value, data.data() + index * sizeof(T), sizeof(T));
  return value;
}

std::int64_t from_floating(double value, bool* exact) {
  const bool integral = std::isfinite(value) && value == std::nearbyint(value) && std::fabs(value) < 9.0e18;
  if (exact != nullptr) *exact = integral;
  return integral ? static_cast<std::int64_t>(value) : std::numeric_limits<std::int64_t>::min();
}

double load_real(DType dtype, std::span<const std::byte> data, std::size_t index) {
  switch (dtype) {
    case DType::half:
      return half_bits_to_float(get<std::uint16_t>(data, index));
    case DType::bfloat16:
      return bf16_bits_to_float(get<std::uint16_t>(data, index));
    case DType::float32:
      return get<float>(data, index);
    case DType::float64:
      return get<double>(data, index);
    case DType::fp8e4m3:
    case DType::fp8e5m2:
      return fp8_decode(get<std::uint8_t>(data, index), fp8_format(dtype));
    default:
      return 0.0;
  }
}

bool equal(DType dtype, std::span<const std::byte> data, std::size_t index, std::int64_t expected) {
  bool exact = true;
  const std::int64_t got = load(dtype, data, index, &exact);
  return exact && got == expected;
}

}  // namespace

std::int64_t input_value(Op op, RedOp redop, DType dtype, int rank, int nranks, std::size_t index) {
  return pattern_values::input(op, redop, dtype, rank, nranks, index);
}

std::int64_t reduced_value(RedOp redop, DType dtype, int nranks, std::size_t index) {
  return pattern_values::reduced(redop, dtype, nranks, index);
}

std::int64_t garbage_value(DType dtype) { return pattern_values::garbage(dtype); }

void store(DType dtype, std::span<std::byte> data, std::size_t index, std::int64_t value) {
  switch (dtype) {
    case DType::int8:
      put(data, index, static_cast<std::int8_t>(value));
      break;
    case DType::uint8:
      put(data, index, static_cast<std::uint8_t>(value));
      break;
    case DType::int32:
      put(data, index, static_cast<std::int32_t>(value));
      break;
    case DType::int64:
      put(data, index, value);
      break;
    case DType::half:
      put(data, index, float_to_half_bits(static_cast<float>(value)));
      break;
    case DType::bfloat16:
      put(data, index, float_to_bf16_bits(static_cast<float>(value)));
      break;
    case DType::float32:
      put(data, index, static_cast<float>(value));
      break;
    case DType::float64:
      put(data, index, static_cast<double>(value));
      break;
    case DType::fp8e4m3:
    case DType::fp8e5m2:
      put(data, index, fp8_code(value, dtype));
      break;
  }
}

std::int64_t load(DType dtype, std::span<const std::byte> data, std::size_t index, bool* exact) {
  if (exact != nullptr) *exact = true;
  switch (dtype) {
    case DType::int8:
      return get<std::int8_t>(data, index);
    case DType::uint8:
      return get<std::uint8_t>(data, index);
    case DType::int32:
      return get<std::int32_t>(data, index);
    case DType::int64:
      return get<std::int64_t>(data, index);
    case DType::half:
      return from_floating(half_bits_to_float(get<std::uint16_t>(data, index)), exact);
    case DType::bfloat16:
      return from_floating(bf16_bits_to_float(get<std::uint16_t>(data, index)), exact);
    case DType::float32:
      return from_floating(get<float>(data, index), exact);
    case DType::float64:
      return from_floating(get<double>(data, index), exact);
    case DType::fp8e4m3:
    case DType::fp8e5m2:
      return from_floating(fp8_decode(get<std::uint8_t>(data, index), fp8_format(dtype)), exact);
  }
  return 0;
}

namespace {

// Writes `count` elements of `value(i)` (periodic in i with `period`) into
// `data`: one block of whole periods is encoded element by element, the rest
// is copies of it, so a fill costs memcpy's speed whatever the type.
template <class Value>
void fill_periodic(DType dtype, std::span<std::byte> data, std::size_t count, std::size_t period, Value&& value) {
  const std::size_t elt = element_size(dtype);
  const std::size_t block = std::min(count, reference_elements(period));
  for (std::size_t i = 0; i < block; ++i) store(dtype, data, i, value(i));
  for (std::size_t done = block; done < count;) {
    const std::size_t n = std::min(done, count - done);  // doubling: whole blocks, as the block is whole periods
    std::memcpy(data.data() + done * elt, data.data(), n * elt);
    done += n;
  }
}

// Wrong elements among data[0, count) against `value(i)` (periodic in i with
// `period`): whole blocks are compared with memcmp against one encoded block,
// and only a block that differs is read element by element, so the count is
// exactly the per-element one (a byte difference that is no value difference,
// such as -0 for 0, is not counted).
template <class Value>
std::uint64_t wrong_periodic(DType dtype, std::span<const std::byte> data, std::size_t count, std::size_t period,
                             Value&& value) {
  const std::size_t elt = element_size(dtype);
  const std::size_t block = std::min(count, reference_elements(period));
  std::vector<std::byte> reference(block * elt);
  for (std::size_t i = 0; i < block; ++i) store(dtype, reference, i, value(i));
  std::uint64_t wrong = 0;
  for (std::size_t start = 0; start < count; start += block) {
    const std::size_t n = std::min(block, count - start);
    if (std::memcmp(data.data() + start * elt, reference.data(), n * elt) == 0) continue;
    for (std::size_t i = 0; i < n; ++i)
      if (!equal(dtype, data, start + i, value(i))) ++wrong;
  }
  return wrong;
}

}  // namespace

std::size_t reference_elements(std::size_t period) {
  // About 16 KiB of 4-byte elements: large enough for memcmp and memcpy to
  // run at full speed, small enough to stay in L1/L2.
  constexpr std::size_t target = 4096;
  const std::size_t p = std::max<std::size_t>(period, 1);
  return (target + p - 1) / p * p;
}

void fill_input(Op op, DType dtype, RedOp redop, int rank, int nranks, int /*root*/, const Counts& counts,
                std::span<std::byte> send) {
  fill_periodic(dtype, send, counts.send, pattern_values::period(op, redop, dtype, nranks),
                [&](std::size_t i) { return input_value(op, redop, dtype, rank, nranks, i); });
}

void fill_garbage(DType dtype, std::span<std::byte> recv, std::size_t elements) {
  const std::int64_t g = garbage_value(dtype);
  fill_periodic(dtype, recv, elements, 1, [g](std::size_t) { return g; });
}

std::uint64_t count_wrong(Op op, DType dtype, RedOp redop, int rank, int nranks, int root, const Counts& counts,
                          std::span<const std::byte> recv) {
  // The same expectations the verify kernel checks on the device.
  const pattern_values::Params p{op, dtype, redop, rank, nranks, root, counts.param, counts.send, counts.recv};
  const std::size_t elements = pattern_values::output_elements(p);
  if (pattern_values::approximate(p)) {
    // A floating average is computed by scaling each input by 1/n (NCCL's
    // pre-multiplied sum), so it is only exact within rounding: the bound is
    // a few ulps per rank, far below the distance to any wrong value (>= 1).
    const double tolerance = pattern_values::tolerance(p);
    std::uint64_t wrong = 0;
    for (std::size_t i = 0; i < elements; ++i)
      if (std::fabs(load_real(dtype, recv, i) - static_cast<double>(pattern_values::expected(p, i))) > tolerance)
        ++wrong;
    return wrong;
  }
  // All-gather and all-to-all outputs are one chunk per source rank, each
  // periodic from its own start; the others are one periodic run.
  const bool chunked = op == Op::allgather || op == Op::alltoall;
  const std::size_t chunk = chunked ? counts.param : elements;
  if (chunk == 0) return 0;
  const std::size_t period = pattern_values::period(op, redop, dtype, nranks);
  std::uint64_t wrong = 0;
  for (std::size_t start = 0; start < elements; start += chunk) {
    const std::size_t n = std::min(chunk, elements - start);
    wrong += wrong_periodic(dtype, recv.subspan(start * element_size(dtype)), n, period,
                            [&](std::size_t i) { return pattern_values::expected(p, start + i); });
  }
  return wrong;
}

}  // namespace fabricbench::pattern
