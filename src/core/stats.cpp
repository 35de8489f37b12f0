#include "fabricbench/core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace fabricbench {

double percentile(std::span<const double> samples, double q) {
  if (samples.empty()) return 0.0;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  q = std::clamp(q, 0.0, 1.0);
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double median(std::span<const double> samples) { return percentile(samples, 0.5); }

SampleStats summarize(std::span<const double> samples) {
  SampleStats s;
  if (samples.empty()) return s;
  const double n = static_cast<double>(samples.size());
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  const auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
  s.min = *lo;
  s.max = *hi;
  s.p50 = percentile(samples, 0.50);
  s.p99 = percentile(samples, 0.99);
  if (samples.size() > 1) {
    double ss = 0;
    for (double x : samples) ss += (x - s.mean) * (x - s.mean);
    s.sd = std::sqrt(ss / (n - 1.0));
    if (s.mean != 0.0) s.cv = s.sd / s.mean;
  }
  return s;
}

Spread spread_of(std::span<const double> values) {
  Spread s;
  if (values.empty()) return s;
  const SampleStats stats = summarize(values);
  s.runs = static_cast<int>(values.size());
  s.mean = stats.mean;
  s.min = stats.min;
  s.max = stats.max;
  s.sd = stats.sd;
  return s;
}

}  // namespace fabricbench
