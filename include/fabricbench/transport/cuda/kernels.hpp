#pragma once
// Host-typed launchers of the kernels in kernels/*.cu. Every .cpp file reaches
// the GPU code through this header only, so no .cpp file needs nvcc. Each
// launcher enqueues on `stream` and returns the launch status (never waits).

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "fabricbench/core/types.hpp"
#include "fabricbench/transport/pattern_values.hpp"

namespace fabricbench::kernels {

// One rank's view of one operation, as the pattern kernels need it: the
// pattern's own parameters.
using PatternLaunch = pattern_values::Params;

// Writes this rank's input (pattern::fill_input) into `send` (send elements).
cudaError_t fill_input(void* send, const PatternLaunch& p, cudaStream_t stream);
// Writes `value` as `dtype` into `elements` elements of `data`.
cudaError_t fill_value(void* data, DType dtype, std::size_t elements, std::int64_t value, cudaStream_t stream);
// Adds the number of wrong output elements (pattern::count_wrong) to
// `*wrong`, a device counter the caller zeroes and reads back.
cudaError_t count_wrong(const void* output, const PatternLaunch& p, unsigned long long* wrong, cudaStream_t stream);

// Holds `stream` until `*release` (host-mapped memory) becomes non-zero, so a
// whole batch can be enqueued behind it before the clock starts. Gives up by
// itself after `timeout_ns` of GPU time and sets `*expired` to 1, so a host
// that never releases cannot wedge the GPU; the host still treats a batch whose
// hold expired as failed.
cudaError_t hold(const volatile int* release, int* expired, std::uint64_t timeout_ns, cudaStream_t stream);

}  // namespace fabricbench::kernels
