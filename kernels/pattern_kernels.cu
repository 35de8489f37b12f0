// Pattern fill and verify kernels. The values come from fabricbench/transport/pattern_values.hpp,
// which a host test pins to src/transport/pattern.cpp; the element conversions below are
// exact because every pattern value is a small integer.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "fabricbench/transport/cuda/kernels.hpp"
#include "fabricbench/transport/pattern_values.hpp"

namespace fabricbench::kernels {
namespace {

namespace pv = pattern_values;

constexpr int block = 256;

template <typename T>
__device__ T from_int(std::int64_t v) {
  return static_cast<T>(v);
}
template <>
__device__ __half from_int<__half>(std::int64_t v) {
  return __float2half_rn(static_cast<float>(v));
}
template <>
__device__ __nv_bfloat16 from_int<__nv_bfloat16>(std::int64_t v) {
  return __float2bfloat16_rn(static_cast<float>(v));
}

// fp8: the pattern's values and its garbage are exact in both formats, so the
// saturating conversion never saturates and never rounds.
template <>
__device__ __nv_fp8_e4m3 from_int<__nv_fp8_e4m3>(std::int64_t v) {
  return __nv_fp8_e4m3(static_cast<float>(v));
}
template <>
__device__ __nv_fp8_e5m2 from_int<__nv_fp8_e5m2>(std::int64_t v) {
  return __nv_fp8_e5m2(static_cast<float>(v));
}

template <typename T>
__device__ double to_real(T v) {
  return static_cast<double>(v);
}
template <>
__device__ double to_real<__half>(__half v) {
  return static_cast<double>(__half2float(v));
}
template <>
__device__ double to_real<__nv_bfloat16>(__nv_bfloat16 v) {
  return static_cast<double>(__bfloat162float(v));
}
template <>
__device__ double to_real<__nv_fp8_e4m3>(__nv_fp8_e4m3 v) {
  return static_cast<double>(static_cast<float>(v));
}
template <>
__device__ double to_real<__nv_fp8_e5m2>(__nv_fp8_e5m2 v) {
  return static_cast<double>(static_cast<float>(v));
}

unsigned grid_for(std::size_t n) {
  const std::size_t blocks = (n + block - 1) / block;
  return static_cast<unsigned>(blocks < 4096 ? (blocks == 0 ? 1 : blocks) : 4096);
}

template <typename T>
__global__ void fill_input_kernel(T* out, pv::Params p) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < p.send;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = from_int<T>(pv::input(p.op, p.redop, p.dtype, p.rank, p.nranks, i));
}

template <typename T>
__global__ void fill_value_kernel(T* out, std::size_t n, std::int64_t value) {
  const T v = from_int<T>(value);
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = v;
}

template <typename T>
__global__ void count_wrong_kernel(const T* in, pv::Params p, unsigned long long* wrong) {
  const std::size_t n = pv::output_elements(p);
  const bool integral = !pv::floating(p.dtype);
  const bool approx = pv::approximate(p);
  const double tol = pv::tolerance(p);
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::int64_t want = pv::expected(p, i);
    bool ok = false;
    if (integral) {
      ok = static_cast<std::int64_t>(in[i]) == want;
    } else {
      const double got = to_real<T>(in[i]);
      const double w = static_cast<double>(want);
      // NaN compares false either way, so it always counts as wrong.
      ok = approx ? fabs(got - w) <= tol : got == w;
    }
    if (!ok) ++mine;
  }
  if (mine != 0) atomicAdd(wrong, mine);
}

// Calls `f` with a null pointer of the element type of `dtype`.
template <typename F>
cudaError_t by_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::int8:
      f(static_cast<std::int8_t*>(nullptr));
      break;
    case DType::uint8:
      f(static_cast<std::uint8_t*>(nullptr));
      break;
    case DType::int32:
      f(static_cast<std::int32_t*>(nullptr));
      break;
    case DType::int64:
      f(static_cast<std::int64_t*>(nullptr));
      break;
    case DType::half:
      f(static_cast<__half*>(nullptr));
      break;
    case DType::bfloat16:
      f(static_cast<__nv_bfloat16*>(nullptr));
      break;
    case DType::float32:
      f(static_cast<float*>(nullptr));
      break;
    case DType::float64:
      f(static_cast<double*>(nullptr));
      break;
    case DType::fp8e4m3:
      f(static_cast<__nv_fp8_e4m3*>(nullptr));
      break;
    case DType::fp8e5m2:
      f(static_cast<__nv_fp8_e5m2*>(nullptr));
      break;
  }
  return cudaGetLastError();
}

__device__ std::uint64_t global_ns() {
  std::uint64_t t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void hold_kernel(const volatile int* release, int* expired, std::uint64_t timeout_ns) {
  const std::uint64_t start = global_ns();
  while (*release == 0) {
    if (global_ns() - start > timeout_ns) {
      *expired = 1;
      __threadfence_system();
      return;
    }
    __nanosleep(1000);
  }
}

}  // namespace

cudaError_t fill_input(void* send, const PatternLaunch& p, cudaStream_t stream) {
  if (p.send == 0) return cudaSuccess;
  return by_type(p.dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    fill_input_kernel<T><<<grid_for(p.send), block, 0, stream>>>(static_cast<T*>(send), p);
  });
}

cudaError_t fill_value(void* data, DType dtype, std::size_t elements, std::int64_t value, cudaStream_t stream) {
  if (elements == 0) return cudaSuccess;
  return by_type(dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    fill_value_kernel<T><<<grid_for(elements), block, 0, stream>>>(static_cast<T*>(data), elements, value);
  });
}

cudaError_t count_wrong(const void* output, const PatternLaunch& p, unsigned long long* wrong, cudaStream_t stream) {
  const std::size_t n = pv::output_elements(p);
  if (n == 0) return cudaSuccess;
  return by_type(p.dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    count_wrong_kernel<T><<<grid_for(n), block, 0, stream>>>(static_cast<const T*>(output), p, wrong);
  });
}

cudaError_t hold(const volatile int* release, int* expired, std::uint64_t timeout_ns, cudaStream_t stream) {
  hold_kernel<<<1, 1, 0, stream>>>(release, expired, timeout_ns);
  return cudaGetLastError();
}

}  // namespace fabricbench::kernels
