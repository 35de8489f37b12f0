#include "fabricbench/records/gpu_ladder.hpp"

#include <array>
#include <utility>

#include <fmt/format.h>

namespace fabricbench {
namespace {

constexpr std::array<std::pair<GpuSetChoice, std::string_view>, 4> choice_labels{{
    {GpuSetChoice::closest, "closest"},
    {GpuSetChoice::spread, "spread"},
    {GpuSetChoice::any, "any"},
    {GpuSetChoice::rank_order, "rank-order"},
}};

}  // namespace

std::string_view name(GpuSetChoice choice) {
  for (const auto& [c, label] : choice_labels)
    if (c == choice) return label;
  return "?";
}

std::optional<GpuSetChoice> parse_gpu_set_choice(std::string_view text) {
  for (const auto& [c, label] : choice_labels)
    if (label == text) return c;
  return std::nullopt;
}

double job_hours(std::int64_t steps, double step_ms) { return static_cast<double>(steps) * step_ms / 3.6e6; }

std::string gpu_level_label(int gpus, GpuSetChoice choice) {
  return fmt::format("{} GPU{} {}", gpus, gpus == 1 ? "" : "s", name(choice));
}

}  // namespace fabricbench
