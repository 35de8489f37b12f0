#include "fabricbench/core/budget.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace fabricbench {

std::string_view name(Phase phase) {
  switch (phase) {
    case Phase::health:
      return "health";
    case Phase::sweep:
      return "sweep";
    case Phase::ladder:
      return "ladder";
    case Phase::gpu_ladder:
      return "gpu_ladder";
    case Phase::pairs:
      return "pairs";
  }
  return "sweep";
}

double Budget::weight(Phase phase) {
  switch (phase) {
    case Phase::health:
    case Phase::gpu_ladder:
      return 1.0;
    case Phase::sweep:
      return 4.0;
    case Phase::ladder:
    case Phase::pairs:
      return 2.0;
  }
  return 1.0;
}

double Budget::remaining_s(SteadyClock::time_point now) const {
  if (!seconds_) return unlimited_seconds;
  return std::max(0.0, *seconds_ - std::chrono::duration<double>(now - start_).count());
}

void Budget::shorten(double fraction, SteadyClock::time_point now) {
  if (!seconds_) return;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  seconds_ = elapsed + remaining_s(now) * std::clamp(fraction, 0.0, 1.0);
}

double Budget::share_s(Phase phase, const std::vector<Phase>& later, SteadyClock::time_point now) const {
  if (!seconds_) return unlimited_seconds;
  double total = weight(phase) + reserve_weight;
  for (const Phase p : later) total += weight(p);
  return remaining_s(now) * weight(phase) / total;
}

std::optional<double> parse_duration_s(std::string_view text) {
  if (text.empty()) return std::nullopt;
  double scale = 1.0;
  const char unit = text.back();
  if (unit == 's' || unit == 'm' || unit == 'h') {
    scale = unit == 's' ? 1.0 : unit == 'm' ? 60.0 : 3600.0;
    text.remove_suffix(1);
  }
  if (text.empty() || text.find_first_not_of("0123456789.") != std::string_view::npos) return std::nullopt;
  try {
    std::size_t used = 0;
    const double value = std::stod(std::string(text), &used);
    if (used != text.size() || !(value > 0.0) || !std::isfinite(value)) return std::nullopt;
    return value * scale;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace fabricbench
