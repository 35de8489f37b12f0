// The system GpuInfoSource: CUDA runtime for the devices and the copies,
// NVML (loaded at run time) for identity, PCIe, NVLink, MIG and ECC.
// Plain C++ against the CUDA runtime API through cuda_support's layer (the
// same owners, device guard, error text and waits as the NCCL transport);
// no kernels, so no nvcc. Every failure becomes a note in the topology.

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"
#include "fabricbench/topology/detail/sysfs_files.hpp"
#include "fabricbench/topology/gpu_probe.hpp"

#include "fabricbench/topology/sysfs_probe.hpp"
#include "fabricbench/transport/cuda/cuda_support.hpp"
#include "fabricbench/transport/cuda/kernels.hpp"

// nvml.h comes with the CUDA toolkit's NVML development files; where it is
// present, its link maximum is used.
#if __has_include(<nvml.h>)
#include <nvml.h>
#define FABRICBENCH_NVML_MAX_LINKS NVML_NVLINK_MAX_LINKS
#else
// NVML_NVLINK_MAX_LINKS of nvml.h as of CUDA 12.8 and 13 (18 links per GPU
// since NVLink 4); NVML answers NVML_ERROR_INVALID_ARGUMENT past the
// device's own last link, which ends the loop earlier.
#define FABRICBENCH_NVML_MAX_LINKS 18
#endif

namespace fabricbench {
namespace {

// The few NVML declarations used here, as NVML's public API defines them;
// nvml.h is not needed at build time.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t nvml_success = 0;
constexpr nvmlReturn_t nvml_invalid_argument = 2;
constexpr unsigned nvml_max_links = FABRICBENCH_NVML_MAX_LINKS;
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
    virtualization_mode = lib_.symbol<nvmlReturn_t (*)(nvmlDevice_t, int*)>("nvmlDeviceGetVirtualizationMode");
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
  nvmlReturn_t (*virtualization_mode)(nvmlDevice_t, int*) = nullptr;

 private:
  SharedLibrary lib_;
  nvmlReturn_t (*init_)() = nullptr;
  nvmlReturn_t (*shutdown_)() = nullptr;
  bool ready_ = false;
  std::string error_;
};

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
        l.remote_kind = type == 0   ? LinkPeer::gpu
                        : type == 1 ? LinkPeer::cpu
                        : type == 2 ? LinkPeer::nvswitch
                                    : LinkPeer::unknown;
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
  // nvmlGpuVirtualizationMode_t: 0 none, 1 passthrough, 2 vGPU, 3 host vGPU, 4 host vSGA.
  int virt = 0;
  if (nvml.virtualization_mode != nullptr && nvml.virtualization_mode(dev, &virt) == nvml_success && virt != 0) {
    static constexpr std::array<const char*, 5> modes{"none", "passthrough", "vgpu", "host_vgpu", "host_vsga"};
    gpu.virtualization = virt > 0 && virt < static_cast<int>(modes.size()) ? modes[static_cast<std::size_t>(virt)]
                                                                           : fmt::format("mode {}", virt);
  }
}

constexpr std::size_t copy_bytes = std::size_t{64} << 20;
constexpr int copy_warmups = 1;  // samples
constexpr int copy_samples = 5;
constexpr int copies_per_sample = 8;
constexpr auto copy_timeout = std::chrono::seconds(30);

// Releases a stream hold whatever ends the sample: the spin kernel must not
// run on to its own expiry.
struct HoldRelease {
  volatile int* flag;
  explicit HoldRelease(volatile int* f) : flag(f) {}
  HoldRelease(const HoldRelease&) = delete;
  HoldRelease& operator=(const HoldRelease&) = delete;
  ~HoldRelease() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    flag[0] = 1;
  }
};

// The median of `copy_samples` samples after warm-ups, in GB/s, on
// `device`'s own stream: each sample is `copies_per_sample` copies enqueued
// behind a spin kernel that holds the stream until all are queued (as
// nvbandwidth times its copies), so the host's enqueue gap between copies
// is not counted, and the median leaves out a sample that something else on
// the machine slowed. Empty with a note on any failure or when a sample does
// not finish within the timeout (never waits forever on the GPU). `enqueue`
// returns the copy call's status.
template <typename Enqueue>
std::optional<double> time_copy(int device, const std::string& what, Enqueue enqueue, std::vector<std::string>& notes) {
  try {
    const DeviceGuard guard(device);
    const Stream stream;
    const Event start;
    const Event stop;
    const MappedHostInts flags(2);
    // NOLINTNEXTLINE(concurrency-mt-unsafe): read before any thread of this probe starts
    const bool held = !launch_blocking([](const char* name) { return std::getenv(name); });
    std::vector<double> samples_ms;
    for (int i = 0; i < copy_warmups + copy_samples; ++i) {
      flags.host()[0] = 0;
      flags.host()[1] = 0;
      std::atomic_thread_fence(std::memory_order_seq_cst);
      // Under CUDA_LAUNCH_BLOCKING=1 the hold's own launch would wait for
      // its expiry: the copies are then timed unheld, enqueue gaps and all.
      if (held)
        FB_CUDA_CHECK(kernels::hold(flags.device(), flags.device() + 1,
                                    static_cast<std::uint64_t>(copy_timeout.count()) * 1000000000U, stream.get()));
      {
        const HoldRelease release{flags.host()};
        FB_CUDA_CHECK(cudaEventRecord(start.get(), stream.get()));
        for (int k = 0; k < copies_per_sample; ++k) {
          if (const cudaError_t rc = enqueue(stream.get()); rc != cudaSuccess) {
            notes.push_back(fmt::format("{}: {}", what, cuda_error_text(rc)));
            return std::nullopt;
          }
        }
        FB_CUDA_CHECK(cudaEventRecord(stop.get(), stream.get()));
      }
      if (!wait_event_until(stop.get(), std::chrono::steady_clock::now() + copy_timeout)) {
        notes.push_back(fmt::format("{}: the copies did not finish within {} s", what, copy_timeout.count()));
        return std::nullopt;
      }
      if (flags.host()[1] != 0) {
        notes.push_back(fmt::format("{}: the stream hold expired before the copies were queued", what));
        return std::nullopt;
      }
      float ms = 0;
      FB_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
      if (i >= copy_warmups && ms > 0) samples_ms.push_back(static_cast<double>(ms) / copies_per_sample);
    }
    if (samples_ms.empty()) {
      notes.push_back(fmt::format("{}: no copy took measurable time", what));
      return std::nullopt;
    }
    std::sort(samples_ms.begin(), samples_ms.end());
    const double median_ms = samples_ms[samples_ms.size() / 2];
    return static_cast<double>(copy_bytes) / (median_ms * 1e-3) / 1e9;
  } catch (const std::exception& e) {
    notes.push_back(fmt::format("{}: {}", what, e.what()));
    return std::nullopt;
  }
}

// The NUMA node sysfs gives the GPU's PCI function, or nullopt (one node, or
// not known).
std::optional<int> gpu_numa_node(int device) {
  std::array<char, 32> bus{};
  if (cudaDeviceGetPCIBusId(bus.data(), static_cast<int>(bus.size()), device) != cudaSuccess) return std::nullopt;
  std::string id(bus.data());
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const detail::FileText text =
      detail::read_small_file(std::filesystem::path("/sys/bus/pci/devices") / id / "numa_node", 64);
  if (!text.text) return std::nullopt;
  try {
    const int node = std::stoi(*text.text);
    return node >= 0 ? std::optional<int>(node) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Pinned host memory on one NUMA node: anonymous pages bound (preferred) to
// the node before they are touched, then registered with CUDA, so a host
// copy measures the GPU's own node rather than wherever the probe's thread
// ran. Move-only; unregistered and unmapped on destruction.
class NodeLocalPinned {
 public:
  NodeLocalPinned(std::size_t bytes, std::optional<int> node) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw SystemError(fmt::format("mmap of {} MiB: {}", bytes >> 20, errno_text(errno)));
    data_ = p;
    if (node && *node < 64) {
      // MPOL_PREFERRED (1): the node's pages when it has them, else any.
      const unsigned long mask = 1UL << static_cast<unsigned>(*node);
      bound_ = syscall(SYS_mbind, p, bytes, 1, &mask, 64UL, 0U) == 0;
    }
    std::memset(p, 0, bytes);  // first touch, on the node
    if (const cudaError_t rc = cudaHostRegister(p, bytes, cudaHostRegisterDefault); rc != cudaSuccess) {
      munmap(p, bytes);
      data_ = nullptr;
      throw SystemError(fmt::format("cudaHostRegister of {} MiB: {}", bytes >> 20, cuda_error_text(rc)));
    }
  }
  NodeLocalPinned(const NodeLocalPinned&) = delete;
  NodeLocalPinned& operator=(const NodeLocalPinned&) = delete;
  ~NodeLocalPinned() {
    if (data_ == nullptr) return;
    FB_CUDA_WARN(cudaHostUnregister(data_));
    munmap(data_, bytes_);
  }
  [[nodiscard]] void* get() const { return data_; }
  [[nodiscard]] bool bound() const { return bound_; }

 private:
  std::size_t bytes_ = 0;
  void* data_ = nullptr;
  bool bound_ = false;
};

// One GPU's pair of copy buffers; empty with a note when they cannot be had.
struct CopyBuffers {
  DeviceBuffer a;
  DeviceBuffer b;
};
std::optional<CopyBuffers> copy_buffers(int device, std::vector<std::string>& notes) {
  try {
    const DeviceGuard guard(device);
    return CopyBuffers{DeviceBuffer(copy_bytes), DeviceBuffer(copy_bytes)};
  } catch (const std::exception& e) {
    notes.push_back(fmt::format("GPU {}: {} MiB copy buffers: {}; not measured", device, copy_bytes >> 20, e.what()));
    return std::nullopt;
  }
}

// Peer access from `from` to `to` where CUDA allows it; the copy works
// either way (through the host), so a failure is a note, not an end.
void enable_peer_access(int from, int to, std::vector<std::string>& notes) {
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, from, to) != cudaSuccess || can == 0) return;
  try {
    const DeviceGuard guard(from);
    const cudaError_t rc = cudaDeviceEnablePeerAccess(to, 0);
    if (rc == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();  // clears the sticky-free error this call leaves behind
    } else if (rc != cudaSuccess) {
      (void)cudaGetLastError();
      notes.push_back(fmt::format("GPU {} to GPU {}: cudaDeviceEnablePeerAccess: {}", from, to, cuda_error_text(rc)));
    }
  } catch (const std::exception& e) {
    notes.push_back(fmt::format("GPU {} to GPU {}: {}", from, to, e.what()));
  }
}

// Host copies at once: each GPU copies `burst_copies` buffers back to back
// on its own stream, all GPUs' bursts enqueued together, so they overlap for
// all but the first microseconds; each GPU's rate is its bytes over its own
// events' time. Alone is the same burst with no other GPU copying.
constexpr int burst_copies = 8;
constexpr int burst_rounds = 3;

struct BurstLane {
  int device = 0;
  void* device_buffer = nullptr;
  void* host_buffer = nullptr;
};

// The rate of each lane, best of `burst_rounds` after one warm-up, with all
// lanes copying together; empty entries with a note where a lane failed.
std::vector<std::optional<double>> time_bursts(const std::vector<BurstLane>& lanes, CopyDirection direction,
                                               const std::string& what, std::vector<std::string>& notes) {
  std::vector<std::optional<double>> best(lanes.size());
  try {
    std::vector<Stream> streams;
    std::vector<Event> starts;
    std::vector<Event> stops;
    for (const BurstLane& lane : lanes) {
      const DeviceGuard guard(lane.device);
      streams.emplace_back();
      starts.emplace_back();
      stops.emplace_back();
    }
    const cudaMemcpyKind kind =
        direction == CopyDirection::host_to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    for (int round = 0; round < 1 + burst_rounds; ++round) {
      for (std::size_t k = 0; k < lanes.size(); ++k) {
        const DeviceGuard guard(lanes[k].device);
        void* dst = kind == cudaMemcpyHostToDevice ? lanes[k].device_buffer : lanes[k].host_buffer;
        const void* src = kind == cudaMemcpyHostToDevice ? lanes[k].host_buffer : lanes[k].device_buffer;
        FB_CUDA_CHECK(cudaEventRecord(starts[k].get(), streams[k].get()));
        for (int c = 0; c < burst_copies; ++c)
          FB_CUDA_CHECK(cudaMemcpyAsync(dst, src, copy_bytes, kind, streams[k].get()));
        FB_CUDA_CHECK(cudaEventRecord(stops[k].get(), streams[k].get()));
      }
      const auto deadline = std::chrono::steady_clock::now() + copy_timeout;
      for (std::size_t k = 0; k < lanes.size(); ++k) {
        const DeviceGuard guard(lanes[k].device);
        if (!wait_event_until(stops[k].get(), deadline)) {
          notes.push_back(fmt::format("{}: GPU {}'s copies did not finish within {} s", what, lanes[k].device,
                                      copy_timeout.count()));
          return std::vector<std::optional<double>>(lanes.size());
        }
        float ms = 0;
        FB_CUDA_CHECK(cudaEventElapsedTime(&ms, starts[k].get(), stops[k].get()));
        if (round == 0 || ms <= 0) continue;
        const double gbs = static_cast<double>(copy_bytes) * burst_copies / (ms * 1e-3) / 1e9;
        if (!best[k] || gbs > *best[k]) best[k] = gbs;
      }
    }
  } catch (const std::exception& e) {
    notes.push_back(fmt::format("{}: {}", what, e.what()));
    return std::vector<std::optional<double>>(lanes.size());
  }
  return best;
}

class SystemGpuSource final : public GpuInfoSource {
 public:
  GpuReport query() override {
    GpuReport report;
    const DeviceProbe devices = probe_devices();
    const int count = devices.count;
    if (count == 0) report.unavailable = devices.reason;
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
        report.notes.push_back(fmt::format("GPU {}: cudaGetDeviceProperties: {}", d, cuda_error_text(p)));
      } else {
        gpu.name = prop.name;
        gpu.memory_bytes = prop.totalGlobalMem;
        gpu.sm_count = prop.multiProcessorCount;
        gpu.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
        gpu.uuid = format_uuid(prop.uuid);
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
        if (const cudaError_t a = cudaDeviceCanAccessPeer(&can, i, j); a != cudaSuccess) {
          report.notes.push_back(
              fmt::format("GPU {} to GPU {}: cudaDeviceCanAccessPeer: {}", i, j, cuda_error_text(a)));
          continue;
        }
        report.p2p_access[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = can != 0;
        if (can == 0) continue;
        int rank = 0;
        if (const cudaError_t a = cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, i, j);
            a != cudaSuccess)
          report.notes.push_back(
              fmt::format("GPU {} to GPU {}: cudaDeviceGetP2PAttribute: {}", i, j, cuda_error_text(a)));
        else
          report.p2p_rank[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = rank;
      }
    }
    return report;
  }

  GpuBandwidth measure() override {
    GpuBandwidth out;
    if (devices_ == 0) return out;
    out.method = fmt::format(
        "cudaMemcpyAsync of {} MiB, {} copies a sample queued behind a spin kernel that holds the stream until "
        "all are enqueued (as nvbandwidth), the median of {} samples after {} warm-up, timed with CUDA events; "
        "host side pinned on each GPU's NUMA node (mbind, then cudaHostRegister); device-to-device between GPUs "
        "with cudaMemcpyPeerAsync (peer access enabled where CUDA allows); device-local is a copy within one GPU, "
        "counting the bytes copied once",
        copy_bytes >> 20, copies_per_sample, copy_samples, copy_warmups);
    const auto n = static_cast<std::size_t>(devices_);
    out.h2d_gbs.resize(n);
    out.d2h_gbs.resize(n);
    out.local_copy_gbs.resize(n);
    out.d2d_gbs.assign(n, std::vector<std::optional<double>>(n));
    std::vector<std::optional<CopyBuffers>> buffers;
    for (int d = 0; d < devices_; ++d) buffers.push_back(copy_buffers(d, out.notes));
    for (int d = 0; d < devices_; ++d) {
      const auto i = static_cast<std::size_t>(d);
      if (!buffers[i]) continue;
      void* src = buffers[i]->a.get();
      void* dst = buffers[i]->b.get();
      // Host buffers on this GPU's own node, as its host copies would be in a job.
      std::optional<NodeLocalPinned> host;
      try {
        const std::optional<int> node = gpu_numa_node(d);
        host.emplace(copy_bytes, node);
        if (node && !host->bound())
          out.notes.push_back(fmt::format("GPU {}: host buffer not bound to NUMA node {} (mbind refused)", d, *node));
      } catch (const std::exception& e) {
        out.notes.push_back(
            fmt::format("GPU {} host-device copies: {} MiB of pinned memory: {}", d, copy_bytes >> 20, e.what()));
      }
      if (host) {
        void* pinned = host->get();
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
        if (i == j || !buffers[static_cast<std::size_t>(i)] || !buffers[static_cast<std::size_t>(j)]) continue;
        void* src = buffers[static_cast<std::size_t>(i)]->a.get();
        void* dst = buffers[static_cast<std::size_t>(j)]->b.get();
        enable_peer_access(i, j, out.notes);
        out.d2d_gbs[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = time_copy(
            i, fmt::format("GPU {} to GPU {}", i, j),
            [&](cudaStream_t s) { return cudaMemcpyPeerAsync(dst, j, src, i, copy_bytes, s); }, out.notes);
      }
    }
    return out;
  }

  ConcurrentCopies measure_concurrent(const std::vector<CopyGroup>& groups) override {
    ConcurrentCopies out;
    if (devices_ == 0 || groups.empty()) return out;
    out.method = fmt::format(
        "per GPU, {} cudaMemcpyAsync of {} MiB back to back on its own stream between its memory and its own "
        "pinned host buffer; the group's bursts enqueued together; best of {} rounds after 1 warm-up, each GPU "
        "timed by its own CUDA events; alone is the same burst with no other GPU copying",
        burst_copies, copy_bytes >> 20, burst_rounds);
    // One device buffer and one pinned host buffer per GPU in any group.
    std::map<int, std::pair<DeviceBuffer, PinnedBuffer>> buffers;
    for (const CopyGroup& g : groups) {
      for (const int d : g.gpus) {
        if (d < 0 || d >= devices_ || buffers.contains(d)) continue;
        try {
          const DeviceGuard guard(d);
          buffers.emplace(d, std::make_pair(DeviceBuffer(copy_bytes), PinnedBuffer(copy_bytes)));
        } catch (const std::exception& e) {
          out.notes.push_back(fmt::format("GPU {}: copy buffers for the copies at once: {}", d, e.what()));
        }
      }
    }
    const auto lane = [&](int d) {
      const auto& [dev, host] = buffers.at(d);
      return BurstLane{d, dev.get(), host.get()};
    };
    std::map<std::pair<int, CopyDirection>, std::optional<double>> alone;
    for (const CopyDirection dir : {CopyDirection::host_to_device, CopyDirection::device_to_host}) {
      for (const auto& [d, unused] : buffers) {
        (void)unused;
        alone[{d, dir}] = time_bursts({lane(d)}, dir, fmt::format("GPU {} {} alone", d, name(dir)), out.notes).front();
      }
      for (const CopyGroup& g : groups) {
        ConcurrentCopy c;
        c.scope = g.scope;
        c.bridge = g.bridge;
        c.direction = dir;
        c.gpus = g.gpus;
        std::vector<BurstLane> lanes;
        for (const int d : g.gpus)
          if (buffers.contains(d)) lanes.push_back(lane(d));
        const auto at_once = time_bursts(
            lanes, dir, fmt::format("{} ({}) at once, {}", g.scope, gpu_list(g.gpus), name(dir)), out.notes);
        for (const int d : g.gpus) {
          c.alone_gbs.push_back(alone[{d, dir}]);
          const auto it = std::find_if(lanes.begin(), lanes.end(), [&](const BurstLane& l) { return l.device == d; });
          c.at_once_gbs.push_back(it == lanes.end() ? std::nullopt
                                                    : at_once[static_cast<std::size_t>(it - lanes.begin())]);
        }
        out.copies.push_back(std::move(c));
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
