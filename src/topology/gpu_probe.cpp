#include "fabricbench/topology/gpu_probe.hpp"

namespace fabricbench {

ConcurrentCopies RecordedGpuSource::measure_concurrent(const std::vector<CopyGroup>& groups) {
  asked_ = groups;
  ConcurrentCopies out;
  out.method = concurrent_.method;
  out.notes = concurrent_.notes;
  for (const CopyGroup& g : groups)
    for (const ConcurrentCopy& c : concurrent_.copies)
      if (c.scope == g.scope && c.gpus == g.gpus) out.copies.push_back(c);
  return out;
}

#if !FABRICBENCH_HAVE_CUDA
namespace {

// Without CUDA there is no runtime to ask; the sysfs facts still stand.
class NoCudaSource final : public GpuInfoSource {
 public:
  GpuReport query() override {
    GpuReport report;
    report.unavailable = "this build has no CUDA support";
    return report;
  }
  GpuBandwidth measure() override { return {}; }
};

}  // namespace

std::unique_ptr<GpuInfoSource> make_system_gpu_source() { return std::make_unique<NoCudaSource>(); }
#endif

}  // namespace fabricbench
