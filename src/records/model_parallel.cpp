#include "fabricbench/records/model_parallel.hpp"

#include <limits>

#include "fabricbench/core/sizes.hpp"

namespace fabricbench {

std::optional<std::size_t> activation_bytes(const ModelParallelConfig& config) {
  const double bytes = static_cast<double>(config.hidden) * static_cast<double>(config.seq) *
                       static_cast<double>(config.micro_batch) * static_cast<double>(element_size(config.dtype));
  if (!(bytes <= static_cast<double>(max_message_bytes))) return std::nullopt;
  return config.hidden * config.seq * config.micro_batch * element_size(config.dtype);
}

double pp_transfer_us(double latency_us, double bandwidth_gbs, std::size_t bytes) {
  if (!(bandwidth_gbs > 0)) return std::numeric_limits<double>::infinity();
  return latency_us + static_cast<double>(bytes) / (bandwidth_gbs * 1e3);
}

}  // namespace fabricbench
