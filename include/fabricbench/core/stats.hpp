#pragma once
// Statistics over per-iteration samples.

#include <span>

namespace fabricbench {

struct SampleStats {
  double mean = 0;
  double p50 = 0;
  double p99 = 0;
  double cv = 0;  // sample standard deviation / mean; 0 for fewer than 2 samples
  double min = 0;
  double max = 0;
};

// Percentile by linear interpolation between closest ranks (the "type 7"
// definition of R and numpy's default), q in [0, 1]. Empty input gives 0.
double percentile(std::span<const double> samples, double q);

SampleStats summarize(std::span<const double> samples);

// The half-width of the mean's 95% confidence interval relative to the mean
// (Student's t for small samples): 0.01 means the mean is known to within 1%.
// Infinite for fewer than 2 samples or a zero mean.
double relative_half_width(std::span<const double> samples);

}  // namespace fabricbench
