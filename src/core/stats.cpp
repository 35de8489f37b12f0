#include "fabricbench/core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
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

double student_t975(int df) {
  // Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom;
  // the normal 1.96 beyond.
  static constexpr double t975[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                    2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                    2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return std::numeric_limits<double>::infinity();
  return static_cast<std::size_t>(df) <= std::size(t975) ? t975[df - 1] : 1.96;
}

double relative_half_width(std::span<const double> samples) {
  const SampleStats s = summarize(samples);
  if (samples.size() < 2 || !(s.mean > 0.0)) return std::numeric_limits<double>::infinity();
  const double t = student_t975(static_cast<int>(std::min<std::size_t>(samples.size() - 1, 1000)));
  return t * s.cv / std::sqrt(static_cast<double>(samples.size()));
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
