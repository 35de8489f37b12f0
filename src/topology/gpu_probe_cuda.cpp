// The system GpuInfoSource: CUDA runtime for the devices and the copies,
// NVML (loaded at run time) for identity, PCIe, NVLink, MIG and ECC.
// Plain C++ against the CUDA runtime API; no kernels, so no nvcc.

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "fabricbench/topology/gpu_probe.hpp"
#include "fabricbench/topology/sysfs_probe.hpp"

namespace fabricbench {
namespace {

// The few NVML declarations used here, as NVML's public API defines them;
// nvml.h is not needed at build time.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t nvml_success = 0;
constexpr nvmlReturn_t nvml_invalid_argument = 2;
constexpr unsigned nvml_max_links = 18;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};

// A dlopen'ed library; move-only, closed on destruction.
class SharedLibrary {
 public:
  explicit SharedLibrary(const char* name) : handle_(dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) {
      const char* why = dlerror();
      error_ = why != nullptr ? why : "dlopen failed";
    }
  }
  SharedLibrary(SharedLibrary&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), error_(std::move(other.error_)) {}
  SharedLibrary& operator=(SharedLibrary&& other) noexcept {
    if (this != &other) {
      close();
      handle_ = std::exchange(other.handle_, nullptr);
      error_ = std::move(other.error_);
    }
    return *this;
  }
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  ~SharedLibrary() { close(); }

  [[nodiscard]] bool loaded() const { return handle_ != nullptr; }
  [[nodiscard]] const std::string& error() const { return error_; }

  template <typename Fn>
  Fn symbol(const char* name) const {
    if (handle_ == nullptr) return nullptr;
    return reinterpret_cast<Fn>(dlsym(handle_, name));
  }

 private:
  void close() {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = nullptr;
  }
  void* handle_;
  std::string error_;
};

// NVML, initialized for the life of this object. Every entry may be missing
// (an old driver); callers check.
class Nvml {
 public:
  Nvml() : lib_("libnvidia-ml.so.1") {
    if (!lib_.loaded()) return;
    init_ = lib_.symbol<nvmlReturn_t (*)()>("nvmlInit_v2");
    shutdown_ = lib_.symbol<nvmlReturn_t (*)()>("nvmlShutdown");
    error_string = lib_.symbol<const char* (*)(nvmlReturn_t)>("nvmlErrorString");
    driver_version = lib_.symbol<nvmlReturn_t (*)(char*, unsigned)>("nvmlSystemGetDriverVersion");
    by_bus_id = lib_.symbol<nvmlReturn_t (*)(const char*, nvmlDevice_t*)>("nvmlDeviceGetHandleByPciBusId_v2");
    name = lib_.symbol<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetName");
    uuid = lib_.symbol<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetUUID");
    curr_gen = lib_.symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetCurrPcieLinkGeneration");
    max_gen = lib_.symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetMaxPcieLinkGeneration");
    curr_width = lib_.symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetCurrPcieLinkWidth");
    max_width = lib_.symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetMaxPcieLinkWidth");
    link_state = lib_.symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned, int*)>("nvmlDeviceGetNvLinkState");
    link_version = lib_.symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned, unsigned*)>("nvmlDeviceGetNvLinkVersion");
    remote_pci =
        lib_.symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned, nvmlPciInfo_t*)>("nvmlDeviceGetNvLinkRemotePciInfo_v2");
    remote_type = lib_.symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned, int*)>("nvmlDeviceGetNvLinkRemoteDeviceType");
    mig_mode = lib_.symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned*, unsigned*)>("nvmlDeviceGetMigMode");
    ecc_mode = lib_.symbol<nvmlReturn_t (*)(nvmlDevice_t, int*, int*)>("nvmlDeviceGetEccMode");
    if (init_ == nullptr || shutdown_ == nullptr) {
      error_ = "libnvidia-ml.so.1 lacks nvmlInit_v2";
      return;
    }
    const nvmlReturn_t rc = init_();
    if (rc != nvml_success) {
      error_ = fmt::format("nvmlInit_v2: {}", describe(rc));
      return;
    }
    ready_ = true;
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  ~Nvml() {
    if (ready_) shutdown_();
  }

  [[nodiscard]] bool ready() const { return ready_; }
  [[nodiscard]] std::string why_not() const { return lib_.loaded() ? error_ : lib_.error(); }
  [[nodiscard]] std::string describe(nvmlReturn_t rc) const {
    if (error_string != nullptr) return error_string(rc);
    return fmt::format("NVML error {}", rc);
  }

  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*by_bus_id)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*curr_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*max_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*curr_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*max_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*link_version)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*remote_type)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*ecc_mode)(nvmlDevice_t, int*, int*) = nullptr;

 private:
  SharedLibrary lib_;
  nvmlReturn_t (*init_)() = nullptr;
  nvmlReturn_t (*shutdown_)() = nullptr;
  bool ready_ = false;
  std::string error_;
};

std::string cuda_text(cudaError_t rc) { return fmt::format("{}: {}", cudaGetErrorName(rc), cudaGetErrorString(rc)); }

std::optional<unsigned> nvml_uint(nvmlReturn_t (*fn)(nvmlDevice_t, unsigned*), nvmlDevice_t dev) {
  unsigned value = 0;
  if (fn == nullptr || fn(dev, &value) != nvml_success) return std::nullopt;
  return value;
}

void fill_from_nvml(const Nvml& nvml, GpuInfo& gpu, std::vector<std::string>& notes) {
  nvmlDevice_t dev = nullptr;
  if (nvml.by_bus_id == nullptr) return;
  if (const nvmlReturn_t rc = nvml.by_bus_id(gpu.pci_bus_id.c_str(), &dev); rc != nvml_success) {
    notes.push_back(fmt::format("NVML GPU {}: {}", gpu.pci_bus_id, nvml.describe(rc)));
    return;
  }
  std::array<char, 128> text{};
  if (nvml.uuid != nullptr && nvml.uuid(dev, text.data(), text.size()) == nvml_success) gpu.uuid = text.data();
  if (nvml.name != nullptr && nvml.name(dev, text.data(), text.size()) == nvml_success) gpu.name = text.data();
  const auto as_int = [](std::optional<unsigned> v) -> std::optional<int> {
    if (!v || *v == 0 || *v > 64) return std::nullopt;
    return static_cast<int>(*v);
  };
  // sysfs already holds the link when it was readable; NVML fills the gaps.
  if (!gpu.pcie.current_gen) gpu.pcie.current_gen = as_int(nvml_uint(nvml.curr_gen, dev));
  if (!gpu.pcie.max_gen) gpu.pcie.max_gen = as_int(nvml_uint(nvml.max_gen, dev));
  if (!gpu.pcie.current_width) gpu.pcie.current_width = as_int(nvml_uint(nvml.curr_width, dev));
  if (!gpu.pcie.max_width) gpu.pcie.max_width = as_int(nvml_uint(nvml.max_width, dev));
  if (nvml.link_state != nullptr) {
    for (unsigned link = 0; link < nvml_max_links; ++link) {
      int state = 0;
      const nvmlReturn_t rc = nvml.link_state(dev, link, &state);
      if (rc == nvml_invalid_argument) break;
      if (rc != nvml_success) continue;  // not supported: no such link on this board
      NvLink l;
      l.link = static_cast<int>(link);
      l.active = state != 0;
      unsigned version = 0;
      if (nvml.link_version != nullptr && nvml.link_version(dev, link, &version) == nvml_success)
        l.version = static_cast<int>(version);
      nvmlPciInfo_t pci{};
      if (nvml.remote_pci != nullptr && nvml.remote_pci(dev, link, &pci) == nvml_success) {
        pci.busId[sizeof(pci.busId) - 1] = '\0';
        l.remote_pci = normalize_bus_id(pci.busId);
      }
      int type = -1;
      if (nvml.remote_type != nullptr && nvml.remote_type(dev, link, &type) == nvml_success)
        l.remote_kind = type == 0 ? "gpu" : type == 1 ? "cpu" : type == 2 ? "switch" : "unknown";
      gpu.nvlinks.push_back(l);
    }
  }
  unsigned mig = 0;
  unsigned mig_pending = 0;
  if (nvml.mig_mode != nullptr && nvml.mig_mode(dev, &mig, &mig_pending) == nvml_success)
    gpu.mig_mode = mig != 0 ? "enabled" : "disabled";
  int ecc = 0;
  int ecc_pending = 0;
  if (nvml.ecc_mode != nullptr && nvml.ecc_mode(dev, &ecc, &ecc_pending) == nvml_success)
    gpu.ecc_mode = ecc != 0 ? "enabled" : "disabled";
}

// Move-only owners of what the copies need.
class DeviceBuffer {
 public:
  DeviceBuffer(int device, std::size_t bytes) {
    if (cudaSetDevice(device) == cudaSuccess && cudaMalloc(&ptr_, bytes) != cudaSuccess) ptr_ = nullptr;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) (void)cudaFree(ptr_);
  }
  [[nodiscard]] void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes) {
    if (cudaMallocHost(&ptr_, bytes) != cudaSuccess) ptr_ = nullptr;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (ptr_ != nullptr) (void)cudaFreeHost(ptr_);
  }
  [[nodiscard]] void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

class StreamAndEvents {
 public:
  explicit StreamAndEvents(int device) {
    ok_ = cudaSetDevice(device) == cudaSuccess &&
          cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) == cudaSuccess &&
          cudaEventCreate(&start_) == cudaSuccess && cudaEventCreate(&stop_) == cudaSuccess;
  }
  StreamAndEvents(const StreamAndEvents&) = delete;
  StreamAndEvents& operator=(const StreamAndEvents&) = delete;
  ~StreamAndEvents() {
    if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
    if (start_ != nullptr) (void)cudaEventDestroy(start_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }
  [[nodiscard]] bool ok() const { return ok_; }
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;

 private:
  bool ok_ = false;
};

constexpr std::size_t copy_bytes = std::size_t{64} << 20;
constexpr int copy_warmups = 2;
constexpr int copy_repeats = 5;
constexpr auto copy_timeout = std::chrono::seconds(30);

// Best of `copy_repeats` timed copies after warm-ups, in GB/s; empty with a
// note on any failure or when a copy does not finish within the timeout
// (never waits forever on the GPU).
template <typename Enqueue>
std::optional<double> time_copy(int device, const std::string& what, Enqueue enqueue, std::vector<std::string>& notes) {
  StreamAndEvents s(device);
  if (!s.ok()) {
    notes.push_back(fmt::format("{}: could not create a stream and events", what));
    return std::nullopt;
  }
  double best_ms = 0;
  for (int i = 0; i < copy_warmups + copy_repeats; ++i) {
    cudaError_t rc = cudaEventRecord(s.start_, s.stream_);
    if (rc == cudaSuccess) rc = enqueue(s.stream_);
    if (rc == cudaSuccess) rc = cudaEventRecord(s.stop_, s.stream_);
    const auto deadline = std::chrono::steady_clock::now() + copy_timeout;
    while (rc == cudaSuccess) {
      const cudaError_t q = cudaEventQuery(s.stop_);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady)
        rc = q;
      else if (std::chrono::steady_clock::now() > deadline) {
        notes.push_back(fmt::format("{}: the copy did not finish within {} s", what, copy_timeout.count()));
        return std::nullopt;
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    if (rc != cudaSuccess) {
      notes.push_back(fmt::format("{}: {}", what, cuda_text(rc)));
      return std::nullopt;
    }
    float ms = 0;
    if (cudaEventElapsedTime(&ms, s.start_, s.stop_) != cudaSuccess || !(ms > 0)) continue;
    if (i >= copy_warmups && (best_ms == 0 || ms < best_ms)) best_ms = ms;
  }
  if (best_ms <= 0) return std::nullopt;
  return static_cast<double>(copy_bytes) / (best_ms * 1e-3) / 1e9;
}

class SystemGpuSource final : public GpuInfoSource {
 public:
  GpuReport query() override {
    GpuReport report;
    int count = 0;
    const cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess) {
      report.unavailable = cuda_text(rc);
    } else if (count == 0) {
      report.unavailable = "CUDA reports 0 devices";
    }
    const Nvml nvml;
    if (nvml.ready() && nvml.driver_version != nullptr) {
      std::array<char, 96> text{};
      if (nvml.driver_version(text.data(), text.size()) == nvml_success) report.driver_version = text.data();
    } else if (!nvml.ready()) {
      report.notes.push_back("NVML: not loaded (" + nvml.why_not() + "); NVLink, UUID, MIG and ECC unknown");
    }
    if (!report.unavailable.empty()) return report;
    devices_ = count;

    for (int d = 0; d < count; ++d) {
      GpuInfo gpu;
      gpu.index = d;
      cudaDeviceProp prop{};
      if (const cudaError_t p = cudaGetDeviceProperties(&prop, d); p != cudaSuccess) {
        report.notes.push_back(fmt::format("GPU {}: cudaGetDeviceProperties: {}", d, cuda_text(p)));
      } else {
        gpu.name = prop.name;
        gpu.memory_bytes = prop.totalGlobalMem;
        gpu.sm_count = prop.multiProcessorCount;
        gpu.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
        std::string uuid = "GPU-";
        for (std::size_t i = 0; i < 16; ++i) {
          if (i == 4 || i == 6 || i == 8 || i == 10) uuid += '-';
          uuid += fmt::format("{:02x}", static_cast<unsigned char>(prop.uuid.bytes[i]));
        }
        gpu.uuid = uuid;
      }
      if (nvml.ready() && !gpu.pci_bus_id.empty()) fill_from_nvml(nvml, gpu, report.notes);
      report.gpus.push_back(std::move(gpu));
    }

    const auto n = static_cast<std::size_t>(count);
    report.p2p_access.assign(n, std::vector<std::optional<bool>>(n));
    report.p2p_rank.assign(n, std::vector<std::optional<int>>(n));
    for (int i = 0; i < count; ++i) {
      for (int j = 0; j < count; ++j) {
        if (i == j) continue;
        int can = 0;
        if (cudaDeviceCanAccessPeer(&can, i, j) == cudaSuccess)
          report.p2p_access[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = can != 0;
        int rank = 0;
        if (can != 0 && cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, i, j) == cudaSuccess)
          report.p2p_rank[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = rank;
      }
    }
    return report;
  }

  GpuBandwidth measure() override {
    GpuBandwidth out;
    if (devices_ == 0) return out;
    out.method = fmt::format(
        "cudaMemcpyAsync of {} MiB, best of {} after {} warm-ups, timed with CUDA events; host side pinned "
        "(cudaMallocHost); device-to-device between GPUs with cudaMemcpyPeerAsync (peer access enabled where "
        "CUDA allows); device-local is a copy within one GPU, counting the bytes copied once",
        copy_bytes >> 20, copy_repeats, copy_warmups);
    const auto n = static_cast<std::size_t>(devices_);
    out.h2d_gbs.resize(n);
    out.d2h_gbs.resize(n);
    out.local_copy_gbs.resize(n);
    out.d2d_gbs.assign(n, std::vector<std::optional<double>>(n));
    const PinnedBuffer host(copy_bytes);
    if (host.get() == nullptr) out.notes.push_back("host-device copies: cudaMallocHost failed");
    std::vector<std::unique_ptr<DeviceBuffer>> a;
    std::vector<std::unique_ptr<DeviceBuffer>> b;
    for (int d = 0; d < devices_; ++d) {
      a.push_back(std::make_unique<DeviceBuffer>(d, copy_bytes));
      b.push_back(std::make_unique<DeviceBuffer>(d, copy_bytes));
    }
    for (int d = 0; d < devices_; ++d) {
      const auto i = static_cast<std::size_t>(d);
      void* src = a[i]->get();
      void* dst = b[i]->get();
      if (src == nullptr || dst == nullptr) {
        out.notes.push_back(fmt::format("GPU {}: cudaMalloc of {} MiB failed; not measured", d, copy_bytes >> 20));
        continue;
      }
      void* pinned = host.get();
      if (pinned != nullptr) {
        out.h2d_gbs[i] = time_copy(
            d, fmt::format("GPU {} host-to-device", d),
            // The device buffer `src` is the destination here; it is the source of the later copies.
            [&](cudaStream_t s) {
              // NOLINTNEXTLINE(readability-suspicious-call-argument)
              return cudaMemcpyAsync(src, pinned, copy_bytes, cudaMemcpyHostToDevice, s);
            },
            out.notes);
        out.d2h_gbs[i] = time_copy(
            d, fmt::format("GPU {} device-to-host", d),
            [&](cudaStream_t s) { return cudaMemcpyAsync(pinned, src, copy_bytes, cudaMemcpyDeviceToHost, s); },
            out.notes);
      }
      out.local_copy_gbs[i] = time_copy(
          d, fmt::format("GPU {} device-local", d),
          [&](cudaStream_t s) { return cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice, s); },
          out.notes);
    }
    for (int i = 0; i < devices_; ++i) {
      for (int j = 0; j < devices_; ++j) {
        if (i == j) continue;
        void* src = a[static_cast<std::size_t>(i)]->get();
        void* dst = b[static_cast<std::size_t>(j)]->get();
        if (src == nullptr || dst == nullptr) continue;
        int can = 0;
        if (cudaDeviceCanAccessPeer(&can, i, j) == cudaSuccess && can != 0 && cudaSetDevice(i) == cudaSuccess) {
          // Already enabled is fine; the copy works either way.
          if (cudaDeviceEnablePeerAccess(j, 0) != cudaSuccess) (void)cudaGetLastError();
        }
        out.d2d_gbs[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = time_copy(
            i, fmt::format("GPU {} to GPU {}", i, j),
            [&](cudaStream_t s) { return cudaMemcpyPeerAsync(dst, j, src, i, copy_bytes, s); }, out.notes);
      }
    }
    return out;
  }

 private:
  int devices_ = 0;
};

}  // namespace

std::unique_ptr<GpuInfoSource> make_system_gpu_source() { return std::make_unique<SystemGpuSource>(); }

}  // namespace fabricbench
