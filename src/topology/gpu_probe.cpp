#include "fabricbench/topology/gpu_probe.hpp"

namespace fabricbench {

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
