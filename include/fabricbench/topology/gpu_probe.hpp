#pragma once
// GpuInfoSource: the one seam through which topology learns what the GPUs
// say about themselves (CUDA runtime and NVML) and what their copies measure.
// The system source loads NVML with dlopen at run time (it comes with the
// driver, not with the build) and uses the CUDA runtime when built with CUDA;
// a recorded source replays fixed values so the analysis is tested without a
// GPU. A source never throws for a missing GPU, driver or library: it says
// why in `unavailable` and `notes`.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/records/topology.hpp"

namespace fabricbench {

struct GpuReport {
  // Empty when GPUs were found; else the reason, e.g. "no CUDA-capable device
  // is detected" or "built without CUDA".
  std::string unavailable;
  std::optional<std::string> driver_version;  // NVML's system driver version
  std::vector<GpuInfo> gpus;                  // by CUDA index; identity, memory, NVLink, MIG, ECC, PCIe from NVML
  std::vector<std::vector<std::optional<bool>>> p2p_access;  // [i][j], CUDA peer access
  std::vector<std::vector<std::optional<int>>> p2p_rank;     // [i][j], CUDA performance rank
  std::vector<std::string> notes;
};

struct GpuBandwidth {
  std::string method;                          // how it was measured
  std::vector<std::optional<double>> h2d_gbs;  // by GPU index
  std::vector<std::optional<double>> d2h_gbs;
  std::vector<std::optional<double>> local_copy_gbs;
  std::vector<std::vector<std::optional<double>>> d2d_gbs;
  std::vector<std::string> notes;
};

// GPUs that copy to and from the host at once: those below one PCIe switch
// or root port, or all of them.
struct CopyGroup {
  std::string scope;
  std::optional<std::string> bridge;
  std::vector<int> gpus;  // CUDA indices
};

struct ConcurrentCopies {
  std::string method;
  std::vector<ConcurrentCopy> copies;  // per group, host-to-device then device-to-host
  std::vector<std::string> notes;
};

class GpuInfoSource {
 public:
  GpuInfoSource() = default;
  GpuInfoSource(const GpuInfoSource&) = delete;
  GpuInfoSource& operator=(const GpuInfoSource&) = delete;
  virtual ~GpuInfoSource() = default;

  virtual GpuReport query() = 0;
  // Copy bandwidths of the GPUs `query` found; empty vectors when there are none.
  virtual GpuBandwidth measure() = 0;
  // Host<->device copies of each group's GPUs all at once, against each
  // alone, timed the same way. A source that cannot copy returns nothing.
  virtual ConcurrentCopies measure_concurrent(const std::vector<CopyGroup>& groups) {
    (void)groups;
    return {};
  }
};

// Replays recorded values.
class RecordedGpuSource final : public GpuInfoSource {
 public:
  RecordedGpuSource(GpuReport report, GpuBandwidth bandwidth, ConcurrentCopies concurrent = {})
      : report_(std::move(report)), bandwidth_(std::move(bandwidth)), concurrent_(std::move(concurrent)) {}
  GpuReport query() override { return report_; }
  GpuBandwidth measure() override { return bandwidth_; }
  // The recorded copies of the groups asked for (matched by scope and GPUs);
  // the groups asked are kept for the tests to read.
  ConcurrentCopies measure_concurrent(const std::vector<CopyGroup>& groups) override;
  [[nodiscard]] const std::vector<CopyGroup>& groups_asked() const { return asked_; }

 private:
  GpuReport report_;
  GpuBandwidth bandwidth_;
  ConcurrentCopies concurrent_;
  std::vector<CopyGroup> asked_;
};

// The GPUs of this machine: CUDA runtime plus NVML when built with CUDA,
// otherwise a source that reports "built without CUDA".
std::unique_ptr<GpuInfoSource> make_system_gpu_source();

// The groups whose host copies are measured at once: GPUs below one PCIe
// switch, then below one root port, then all of them; each set of GPUs
// once, only sets of two or more GPUs with a CUDA index.
std::vector<CopyGroup> contention_groups(const NodeTopology& node);

}  // namespace fabricbench
