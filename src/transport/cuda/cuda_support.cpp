#include "fabricbench/transport/cuda/cuda_support.hpp"

#include <dlfcn.h>

#include <cstdio>
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

std::string version_text(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

}  // namespace

std::string cuda_error_text(cudaError_t code) {
  return fmt::format("{}: {}", cudaGetErrorName(code), cudaGetErrorString(code));
}

std::string format_uuid(const cudaUUID_t& uuid) {
  std::string text = "GPU-";
  for (std::size_t i = 0; i < sizeof(uuid.bytes); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    text += fmt::format("{:02x}", static_cast<unsigned char>(uuid.bytes[i]));
  }
  return text;
}

ErrorRankScope::ErrorRankScope(int rank) : previous_(current_error_rank) { current_error_rank = rank; }
ErrorRankScope::~ErrorRankScope() { current_error_rank = previous_; }
int error_rank() { return current_error_rank; }

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  throw SystemError(describe_failure(call, file, line, fmt::format("{} ({})", cuda_error_text(code), where())));
}

void throw_nccl_error(ncclResult_t code, const char* call, const char* file, int line) {
  throw SystemError(describe_failure(call, file, line, fmt::format("{} ({})", ncclGetErrorString(code), where())));
}

void warn_cuda_error(cudaError_t code, const char* call, const char* file, int line) noexcept {
  try {
    std::fprintf(stderr, "fabricbench: warning: %s\n",
                 describe_failure(call, file, line, fmt::format("{} ({})", cuda_error_text(code), where())).c_str());
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
      probe.reason = cuda_error_text(status);
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
  d.uuid = format_uuid(prop.uuid);
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

namespace {
// Whether the calling thread has a current CUDA context (a device was set
// or used on it), through the driver's cuCtxGetCurrent as the runtime
// reaches it: no link to libcuda. When the driver cannot be asked, true
// (restore, as before).
bool thread_has_context() {
  using GetCurrent = int (*)(void**);  // CUresult cuCtxGetCurrent(CUcontext*)
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || fn == nullptr)
    return true;
  void* context = nullptr;
  return reinterpret_cast<GetCurrent>(fn)(&context) != 0 || context != nullptr;  // NOLINT(*-reinterpret-cast)
}
}  // namespace

DeviceGuard::DeviceGuard(int device) : restore_(thread_has_context()) {
  FB_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device || !restore_) FB_CUDA_CHECK(cudaSetDevice(device));
}
DeviceGuard::~DeviceGuard() {
  if (!restore_) return;  // nothing was current: leave no context on device 0
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now == previous_) return;
  FB_CUDA_WARN(cudaSetDevice(previous_));
}

PinnedBuffer::PinnedBuffer(std::size_t bytes) { FB_CUDA_CHECK(cudaMallocHost(&data_, bytes)); }
PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    PinnedBuffer doomed(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}
PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) FB_CUDA_WARN(cudaFreeHost(data_));
}

NcclMemory nccl_memory() {
  NcclMemory m;
  // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): dlsym's void* to a function
  m.alloc = reinterpret_cast<ncclResult_t (*)(void**, std::size_t)>(::dlsym(RTLD_DEFAULT, "ncclMemAlloc"));
  m.free = reinterpret_cast<ncclResult_t (*)(void*)>(::dlsym(RTLD_DEFAULT, "ncclMemFree"));
  // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
  return m;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  FB_CUDA_CHECK(cudaMalloc(&data_, bytes));
}
DeviceBuffer::DeviceBuffer(std::size_t bytes, const NcclMemory& memory) : size_(bytes) {
  if (bytes == 0) return;
  if (!memory.available()) throw SystemError("ncclMemAlloc is not in the loaded NCCL (2.19 or newer has it)");
  FB_NCCL_CHECK(memory.alloc(&data_, bytes));
  nccl_free_ = memory.free;
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      nccl_free_(std::exchange(other.nccl_free_, nullptr)) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    DeviceBuffer doomed(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    nccl_free_ = std::exchange(other.nccl_free_, nullptr);
  }
  return *this;
}
DeviceBuffer::~DeviceBuffer() {
  if (data_ == nullptr) return;
  if (nccl_free_ != nullptr)
    FB_NCCL_WARN(nccl_free_(data_));
  else
    FB_CUDA_WARN(cudaFree(data_));
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

NcclComm::NcclComm(NcclComm&& other) noexcept
    : comm_(std::exchange(other.comm_, nullptr)), blocking_(other.blocking_), teardown_limit_(other.teardown_limit_) {}
NcclComm& NcclComm::operator=(NcclComm&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, nullptr);
    blocking_ = other.blocking_;
    teardown_limit_ = other.teardown_limit_;
  }
  return *this;
}
NcclComm::~NcclComm() { release(); }

PollState nccl_state(ncclComm_t comm, ncclResult_t* error) {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t rc = ncclCommGetAsyncError(comm, &state);
  if (rc != ncclSuccess) state = rc;
  if (error != nullptr) *error = state;
  if (state == ncclSuccess) return PollState::done;
  return state == ncclInProgress ? PollState::pending : PollState::failed;
}

void NcclComm::release() noexcept {
  if (comm_ == nullptr) return;
  if (blocking_) {
    // A blocking finalize has no deadline (see the header): abort, which
    // returns once NCCL's own threads have stopped.
    FB_NCCL_WARN(ncclCommAbort(std::exchange(comm_, nullptr)));
    return;
  }
  ncclResult_t error = ncclSuccess;
  const CommTeardown steps{[&] { return nccl_state(comm_, &error); },
                           [&] {
                             const ncclResult_t rc = ncclCommFinalize(comm_);
                             if (rc == ncclSuccess || rc == ncclInProgress) return true;
                             warn_nccl_error(rc, "ncclCommFinalize(comm_)", __FILE__, __LINE__);
                             return false;
                           },
                           [&] { FB_NCCL_WARN(ncclCommDestroy(comm_)); }, [&] { FB_NCCL_WARN(ncclCommAbort(comm_)); }};
  TeardownEnd end = TeardownEnd::aborted_failed;
  try {
    end = tear_down(steps, std::chrono::steady_clock::now() + teardown_limit_);
  } catch (...) {  // std::function's own failures only: abort to be safe
    FB_NCCL_WARN(ncclCommAbort(comm_));
  }
  if (end == TeardownEnd::aborted_expired || (end == TeardownEnd::aborted_failed && error != ncclSuccess)) {
    try {
      std::fprintf(stderr, "fabricbench: warning: %s\n",
                   (end == TeardownEnd::aborted_expired
                        ? fmt::format("ncclCommFinalize did not finish within {} ms ({}); the communicator was aborted",
                                      teardown_limit_.count(), where())
                        : fmt::format("NCCL communicator in error at teardown: {} ({}); it was aborted",
                                      ncclGetErrorString(error), where()))
                       .c_str());
    } catch (...) {  // NOLINT(bugprone-empty-catch): a warning that cannot be formatted is dropped
    }
  }
  comm_ = nullptr;
}

void NcclComm::abort() noexcept {
  if (comm_ == nullptr) return;
  FB_NCCL_WARN(ncclCommAbort(comm_));
  comm_ = nullptr;
}

namespace {
[[noreturn]] void expire(NcclComm& comm, const std::string& what, const char* waiting_for) {
  comm.abort();
  throw TimeoutError(
      fmt::format("timed out waiting for {} ({}); the NCCL communicator was aborted", what, waiting_for));
}
}  // namespace

void wait_event(cudaEvent_t event, NcclComm& comm, Deadline deadline, const std::string& what,
                const std::function<void()>& before_abort) {
  cudaError_t cuda = cudaSuccess;
  ncclResult_t nccl = ncclSuccess;
  const WaitEnd end = poll_until(
      [&] {
        cuda = cudaEventQuery(event);
        if (cuda == cudaSuccess) return PollState::done;
        if (cuda != cudaErrorNotReady) return PollState::failed;
        cuda = cudaSuccess;
        // A peer that failed makes NCCL report it here while our stream waits.
        return nccl_state(comm.get(), &nccl) == PollState::failed ? PollState::failed : PollState::pending;
      },
      deadline);
  if (end == WaitEnd::done) return;
  if (before_abort) before_abort();
  if (end == WaitEnd::expired) expire(comm, what, "the GPU stream");
  if (cuda != cudaSuccess) {
    comm.abort();
    throw_cuda_error(cuda, "cudaEventQuery(event)", __FILE__, __LINE__);
  }
  comm.abort();
  throw SystemError(fmt::format("NCCL reported an asynchronous error during {}: {}; the communicator was aborted", what,
                                ncclGetErrorString(nccl)));
}

void wait_comm_ready(NcclComm& comm, Deadline deadline, const std::string& what) {
  ncclResult_t error = ncclSuccess;
  const WaitEnd end = poll_until([&] { return nccl_state(comm.get(), &error); }, deadline);
  if (end == WaitEnd::done) return;
  if (end == WaitEnd::expired) expire(comm, what, "the NCCL communicator");
  comm.abort();
  throw SystemError(fmt::format("NCCL failed during {}: {}", what, ncclGetErrorString(error)));
}

bool wait_event_until(cudaEvent_t event, Deadline deadline) {
  cudaError_t status = cudaSuccess;
  const WaitEnd end = poll_until(
      [&] {
        status = cudaEventQuery(event);
        if (status == cudaSuccess) return PollState::done;
        return status == cudaErrorNotReady ? PollState::pending : PollState::failed;
      },
      deadline);
  if (end == WaitEnd::failed) throw_cuda_error(status, "cudaEventQuery(event)", __FILE__, __LINE__);
  return end == WaitEnd::done;
}

}  // namespace fabricbench
