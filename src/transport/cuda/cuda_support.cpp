#include "fabricbench/transport/cuda/cuda_support.hpp"

#include <cstdio>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "fabricbench/comm/layout.hpp"

namespace fabricbench {
namespace {

// -1: not inside any rank's scope. Thread-local, never shared.
thread_local int current_error_rank = -1;

std::string where() {
  return current_error_rank < 0 ? fmt::format("host {}", this_hostname())
                                : fmt::format("host {}, rank {}", this_hostname(), current_error_rank);
}

std::string cuda_text(cudaError_t code) {
  return fmt::format("{}: {}", cudaGetErrorName(code), cudaGetErrorString(code));
}

std::string version_text(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

}  // namespace

ErrorRankScope::ErrorRankScope(int rank) : previous_(current_error_rank) { current_error_rank = rank; }
ErrorRankScope::~ErrorRankScope() { current_error_rank = previous_; }
int error_rank() { return current_error_rank; }

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  throw SystemError(describe_failure(call, file, line, fmt::format("{} ({})", cuda_text(code), where())));
}

void throw_nccl_error(ncclResult_t code, const char* call, const char* file, int line) {
  throw SystemError(describe_failure(call, file, line, fmt::format("{} ({})", ncclGetErrorString(code), where())));
}

void warn_cuda_error(cudaError_t code, const char* call, const char* file, int line) noexcept {
  try {
    std::fprintf(stderr, "fabricbench: warning: %s\n",
                 describe_failure(call, file, line, fmt::format("{} ({})", cuda_text(code), where())).c_str());
  } catch (...) {  // NOLINT(bugprone-empty-catch): a warning that cannot be formatted is dropped
  }
}

void warn_nccl_error(ncclResult_t code, const char* call, const char* file, int line) noexcept {
  try {
    std::fprintf(stderr, "fabricbench: warning: %s\n",
                 describe_failure(call, file, line, fmt::format("{} ({})", ncclGetErrorString(code), where())).c_str());
  } catch (...) {  // NOLINT(bugprone-empty-catch): as above
  }
}

DeviceProbe probe_devices() noexcept {
  DeviceProbe probe;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    try {
      probe.reason = cuda_text(status);
    } catch (...) {
      probe.reason = "cudaGetDeviceCount failed";
    }
    return probe;
  }
  probe.count = count;
  if (count == 0) probe.reason = "cudaGetDeviceCount found 0 devices";
  return probe;
}

GpuDescription describe_device(int index) {
  GpuDescription d;
  d.index = index;
  cudaDeviceProp prop{};
  FB_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  d.name = prop.name;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  char bus[32] = {};
  FB_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof(bus), index));
  d.pci_bus_id = bus;
  const auto* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);  // NOLINT: bytes of a char array
  std::string hex;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) hex += '-';
    hex += fmt::format("{:02x}", u[i]);
  }
  d.uuid = "GPU-" + hex;
  return d;
}

std::string cuda_driver_version() {
  int v = 0;
  return cudaDriverGetVersion(&v) == cudaSuccess && v > 0 ? version_text(v) : std::string();
}

std::string cuda_runtime_version() {
  int v = 0;
  return cudaRuntimeGetVersion(&v) == cudaSuccess ? version_text(v) : std::string();
}

std::string nccl_runtime_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return {};
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  FB_CUDA_CHECK(cudaMalloc(&data_, bytes));
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    DeviceBuffer doomed(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}
DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) FB_CUDA_WARN(cudaFree(data_));
}

MappedHostInts::MappedHostInts(std::size_t count) {
  void* p = nullptr;
  FB_CUDA_CHECK(cudaHostAlloc(&p, count * sizeof(int), cudaHostAllocMapped));
  host_ = static_cast<volatile int*>(p);
  for (std::size_t i = 0; i < count; ++i) host_[i] = 0;
  void* d = nullptr;
  const cudaError_t status = cudaHostGetDevicePointer(&d, p, 0);
  if (status != cudaSuccess) {
    FB_CUDA_WARN(cudaFreeHost(p));
    throw_cuda_error(status, "cudaHostGetDevicePointer(&d, p, 0)", __FILE__, __LINE__);
  }
  device_ = static_cast<int*>(d);
}
MappedHostInts::MappedHostInts(MappedHostInts&& other) noexcept
    : host_(std::exchange(other.host_, nullptr)), device_(std::exchange(other.device_, nullptr)) {}
MappedHostInts& MappedHostInts::operator=(MappedHostInts&& other) noexcept {
  if (this != &other) {
    MappedHostInts doomed(std::move(*this));
    host_ = std::exchange(other.host_, nullptr);
    device_ = std::exchange(other.device_, nullptr);
  }
  return *this;
}
MappedHostInts::~MappedHostInts() {
  if (host_ != nullptr) FB_CUDA_WARN(cudaFreeHost(const_cast<int*>(host_)));  // NOLINT: freeing our own allocation
}

Stream::Stream() { FB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
Stream::Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Stream doomed(std::move(*this));
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}
Stream::~Stream() {
  if (stream_ != nullptr) FB_CUDA_WARN(cudaStreamDestroy(stream_));
}

Event::Event() { FB_CUDA_CHECK(cudaEventCreate(&event_)); }
Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Event doomed(std::move(*this));
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}
Event::~Event() {
  if (event_ != nullptr) FB_CUDA_WARN(cudaEventDestroy(event_));
}

GraphExec::GraphExec(cudaGraph_t graph) : graph_(graph) {
  const cudaError_t status = cudaGraphInstantiate(&exec_, graph_, 0);
  if (status != cudaSuccess) {
    FB_CUDA_WARN(cudaGraphDestroy(graph_));
    graph_ = nullptr;
    throw_cuda_error(status, "cudaGraphInstantiate(&exec_, graph_, 0)", __FILE__, __LINE__);
  }
}
GraphExec::GraphExec(GraphExec&& other) noexcept
    : graph_(std::exchange(other.graph_, nullptr)), exec_(std::exchange(other.exec_, nullptr)) {}
GraphExec& GraphExec::operator=(GraphExec&& other) noexcept {
  if (this != &other) {
    GraphExec doomed(std::move(*this));
    graph_ = std::exchange(other.graph_, nullptr);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}
GraphExec::~GraphExec() {
  if (exec_ != nullptr) FB_CUDA_WARN(cudaGraphExecDestroy(exec_));
  if (graph_ != nullptr) FB_CUDA_WARN(cudaGraphDestroy(graph_));
}

NcclComm::NcclComm(NcclComm&& other) noexcept : comm_(std::exchange(other.comm_, nullptr)) {}
NcclComm& NcclComm::operator=(NcclComm&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, nullptr);
  }
  return *this;
}
NcclComm::~NcclComm() { release(); }

void NcclComm::release() noexcept {
  if (comm_ == nullptr) return;
  // Finalize flushes outstanding work; a communicator in error is aborted
  // instead, since finalizing it could wait forever.
  ncclResult_t state = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state == ncclSuccess) {
    FB_NCCL_WARN(ncclCommFinalize(comm_));
    FB_NCCL_WARN(ncclCommDestroy(comm_));
  } else {
    FB_NCCL_WARN(ncclCommAbort(comm_));
  }
  comm_ = nullptr;
}

void NcclComm::abort() noexcept {
  if (comm_ == nullptr) return;
  FB_NCCL_WARN(ncclCommAbort(comm_));
  comm_ = nullptr;
}

namespace {
// Short sleeps first (a small op finishes in microseconds), then longer ones
// so a long wait does not burn a core.
void back_off(int& polls) {
  ++polls;
  if (polls < 100)
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(polls < 1000 ? 20 : 500));
}

[[noreturn]] void expire(NcclComm& comm, const std::string& what, const char* waiting_for) {
  comm.abort();
  throw TimeoutError(
      fmt::format("timed out waiting for {} ({}); the NCCL communicator was aborted", what, waiting_for));
}

void check_async(NcclComm& comm, const std::string& what) {
  ncclResult_t state = ncclSuccess;
  FB_NCCL_CHECK(ncclCommGetAsyncError(comm.get(), &state));
  if (state != ncclSuccess && state != ncclInProgress) {
    comm.abort();
    throw SystemError(
        fmt::format("NCCL reported an asynchronous error during {}: {}", what, ncclGetErrorString(state)));
  }
}
}  // namespace

void wait_event(cudaEvent_t event, NcclComm& comm, Deadline deadline, const std::string& what) {
  int polls = 0;
  for (;;) {
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) throw_cuda_error(status, "cudaEventQuery(event)", __FILE__, __LINE__);
    check_async(comm, what);
    if (std::chrono::steady_clock::now() > deadline) expire(comm, what, "the GPU stream");
    back_off(polls);
  }
}

void wait_comm_ready(NcclComm& comm, Deadline deadline, const std::string& what) {
  int polls = 0;
  for (;;) {
    ncclResult_t state = ncclSuccess;
    FB_NCCL_CHECK(ncclCommGetAsyncError(comm.get(), &state));
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      comm.abort();
      throw SystemError(fmt::format("NCCL failed during {}: {}", what, ncclGetErrorString(state)));
    }
    if (std::chrono::steady_clock::now() > deadline) expire(comm, what, "the NCCL communicator");
    back_off(polls);
  }
}

}  // namespace fabricbench
