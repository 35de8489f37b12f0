#pragma once
// The one CUDA and NCCL layer of fabricbench, for the NCCL transport and the
// topology probe alike: check macros that throw with the call text,
// file:line, the error string, host and rank (and no-throw twins for
// destructors), a guard that names the device for a scope, move-only owners
// of every handle, the waits with a deadline, and the device probe that
// tells "no GPU here" apart from a failure.
//
// Every function that touches CUDA expects its device to be current: callers
// hold a DeviceGuard. Only built with CUDA; include only where
// FABRICBENCH_HAVE_CUDA is 1.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "fabricbench/core/error.hpp"
#include "fabricbench/transport/cuda/gpu_wait.hpp"

namespace fabricbench {

// A wait that ran past its deadline. The communicator has been aborted by the
// time this is thrown.
class TimeoutError : public SystemError {
 public:
  using SystemError::SystemError;
};

// The rank named in CUDA and NCCL error messages of the calling thread. Set
// for the life of a scope; thread-local because in single-process mode each
// thread is a rank, and a check deep in a call path has no rank to hand.
class ErrorRankScope {
 public:
  explicit ErrorRankScope(int rank);
  ErrorRankScope(const ErrorRankScope&) = delete;
  ErrorRankScope& operator=(const ErrorRankScope&) = delete;
  ~ErrorRankScope();

 private:
  int previous_;
};
int error_rank();

// "cudaErrorNoDevice: no CUDA-capable device is detected"
std::string cuda_error_text(cudaError_t code);
// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi writes it.
std::string format_uuid(const cudaUUID_t& uuid);

[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);
[[noreturn]] void throw_nccl_error(ncclResult_t code, const char* call, const char* file, int line);
// The no-throw twins: one line on stderr, for destructors.
void warn_cuda_error(cudaError_t code, const char* call, const char* file, int line) noexcept;
void warn_nccl_error(ncclResult_t code, const char* call, const char* file, int line) noexcept;

#define FB_CUDA_CHECK(call)                                                                                          \
  do {                                                                                                               \
    const cudaError_t fb_cuda_status_ = (call);                                                                      \
    if (fb_cuda_status_ != cudaSuccess) ::fabricbench::throw_cuda_error(fb_cuda_status_, #call, __FILE__, __LINE__); \
  } while (false)
#define FB_CUDA_WARN(call)                                                                                          \
  do {                                                                                                              \
    const cudaError_t fb_cuda_status_ = (call);                                                                     \
    if (fb_cuda_status_ != cudaSuccess) ::fabricbench::warn_cuda_error(fb_cuda_status_, #call, __FILE__, __LINE__); \
  } while (false)
// ncclInProgress is success for a non-blocking communicator: the caller polls.
#define FB_NCCL_CHECK(call)                                                        \
  do {                                                                             \
    const ncclResult_t fb_nccl_status_ = (call);                                   \
    if (fb_nccl_status_ != ncclSuccess && fb_nccl_status_ != ncclInProgress)       \
      ::fabricbench::throw_nccl_error(fb_nccl_status_, #call, __FILE__, __LINE__); \
  } while (false)
#define FB_NCCL_WARN(call)                                                        \
  do {                                                                            \
    const ncclResult_t fb_nccl_status_ = (call);                                  \
    if (fb_nccl_status_ != ncclSuccess && fb_nccl_status_ != ncclInProgress)      \
      ::fabricbench::warn_nccl_error(fb_nccl_status_, #call, __FILE__, __LINE__); \
  } while (false)

// Whether CUDA devices are visible, asked without side effects beyond
// initializing the runtime.
struct DeviceProbe {
  int count = 0;
  std::string reason;  // why none, when count == 0: "cudaErrorNoDevice: ..."
};
DeviceProbe probe_devices() noexcept;

// What is recorded about the GPU a rank drives.
struct GpuDescription {
  int index = 0;  // among the devices visible to the process
  std::string name;
  std::string pci_bus_id;
  std::string uuid;  // GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
  int cc_major = 0;
  int cc_minor = 0;
};
GpuDescription describe_device(int index);
// "13.0" style versions; empty when unknown.
std::string cuda_driver_version();
std::string cuda_runtime_version();
std::string nccl_runtime_version();

// Makes `device` current for the life of a scope and restores the device
// that was current before (CUDA's current device is per thread and global to
// it: a probe that visits every GPU must not leave the last one current).
// Only a device that had a context is restored: before anything was set,
// cudaGetDevice says 0, and since CUDA 12 cudaSetDevice(0) creates GPU 0's
// primary context, so every rank of a node would put a context on GPU 0
// (its memory, and a launch failure under exclusive-process mode). Whether
// the thread had a context is asked of the driver (cuCtxGetCurrent).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  ~DeviceGuard();

 private:
  int previous_ = -1;
  bool restore_ = false;
};

// NCCL's own allocator (ncclMemAlloc and ncclMemFree, NCCL 2.19 and newer),
// looked up in the loaded libnccl at run time, so that an older one still
// loads; both null when it has none. Memory from it is what NCCL can
// register for NVLS and zero-copy transfers when a CUDA graph is captured
// (cudaMalloc'ed memory it cannot), as nccl-tests allocates for -G.
struct NcclMemory {
  ncclResult_t (*alloc)(void**, std::size_t) = nullptr;
  ncclResult_t (*free)(void*) = nullptr;
  [[nodiscard]] bool available() const { return alloc != nullptr && free != nullptr; }
};
NcclMemory nccl_memory();

// Device memory; move-only. Freed with a warning, never a throw, on error.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  // From NCCL's allocator (`memory` must be available()).
  DeviceBuffer(std::size_t bytes, const NcclMemory& memory);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  [[nodiscard]] void* get() const { return data_; }
  [[nodiscard]] std::byte* bytes() const { return static_cast<std::byte*>(data_); }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  ncclResult_t (*nccl_free_)(void*) = nullptr;  // set when NCCL allocated it
};

// Pinned host memory (cudaMallocHost); move-only.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes);
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer();
  [[nodiscard]] void* get() const { return data_; }

 private:
  void* data_ = nullptr;
};

// Pinned host memory mapped into the device's address space: the hold
// kernel's release flag and expiry marker.
class MappedHostInts {
 public:
  explicit MappedHostInts(std::size_t count);
  MappedHostInts(MappedHostInts&& other) noexcept;
  MappedHostInts& operator=(MappedHostInts&& other) noexcept;
  MappedHostInts(const MappedHostInts&) = delete;
  MappedHostInts& operator=(const MappedHostInts&) = delete;
  ~MappedHostInts();
  [[nodiscard]] volatile int* host() const { return host_; }
  [[nodiscard]] int* device() const { return device_; }

 private:
  volatile int* host_ = nullptr;
  int* device_ = nullptr;
};

class Stream {
 public:
  Stream();  // non-blocking with respect to the legacy default stream
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();
  [[nodiscard]] cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  Event();  // with timing
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();
  [[nodiscard]] cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// An instantiated CUDA graph; move-only.
class GraphExec {
 public:
  GraphExec() = default;
  explicit GraphExec(cudaGraph_t graph);  // takes ownership of `graph` too
  GraphExec(GraphExec&& other) noexcept;
  GraphExec& operator=(GraphExec&& other) noexcept;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec();
  [[nodiscard]] cudaGraphExec_t get() const { return exec_; }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// A NCCL communicator; move-only. A non-blocking one is released by
// finalize, polling until the finalize has finished, then destroy; one in
// error, or one whose finalize does not finish within its teardown limit, is
// aborted instead. A blocking one is aborted: its ncclCommFinalize runs
// NCCL's commDestroySync (src/init.cc) in the calling thread, which meets
// the node's other ranks at a bootstrap barrier before stopping its proxy
// (a dead peer: never returns), so no deadline could bound it; its owner has
// already drained its stream against one (NcclTransport's destructor), which
// leaves abort nothing to cut short.
// abort() is for a communicator that may never finish its work.
class NcclComm {
 public:
  NcclComm() = default;
  NcclComm(ncclComm_t comm, bool blocking, std::chrono::milliseconds teardown_limit)
      : comm_(comm), blocking_(blocking), teardown_limit_(teardown_limit) {}
  NcclComm(NcclComm&& other) noexcept;
  NcclComm& operator=(NcclComm&& other) noexcept;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ~NcclComm();
  [[nodiscard]] ncclComm_t get() const { return comm_; }
  [[nodiscard]] bool blocking() const { return blocking_; }
  void abort() noexcept;

 private:
  void release() noexcept;
  ncclComm_t comm_ = nullptr;
  bool blocking_ = false;
  std::chrono::milliseconds teardown_limit_{0};
};

// ncclCommGetAsyncError as a poll: done on ncclSuccess, pending on
// ncclInProgress, failed on anything else (its code in `*error`).
PollState nccl_state(ncclComm_t comm, ncclResult_t* error);

// Polls until `event` has completed, checking `comm`'s asynchronous error
// between polls. Past `deadline` aborts `comm` and throws TimeoutError with
// `what` (the op, size, rank, host and GPU). `before_abort` runs before any
// abort: NCCL's abort frees host memory with cudaFreeHost, which waits for
// the device, so a stream hold still spinning must be released first or
// the abort waits for the hold's own expiry.
void wait_event(cudaEvent_t event, NcclComm& comm, Deadline deadline, const std::string& what,
                const std::function<void()>& before_abort = {});
// Polls until `comm` has left ncclInProgress (after a non-blocking call);
// aborts it and throws on an error or past the deadline.
void wait_comm_ready(NcclComm& comm, Deadline deadline, const std::string& what);
// Polls until `event` has completed, without a communicator: false past the
// deadline, throws on a CUDA error.
bool wait_event_until(cudaEvent_t event, Deadline deadline);

}  // namespace fabricbench
