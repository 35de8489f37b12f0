#pragma once
// Statistics: the one percentile, median and spread every layer uses, so a
// median named in a finding, a table and a chart is the same number.

#include <span>

namespace fabricbench {

struct SampleStats {
  double mean = 0;
  double p50 = 0;
  double p99 = 0;
  double sd = 0;  // sample standard deviation; 0 for fewer than 2 samples
  double cv = 0;  // sd / mean; 0 for fewer than 2 samples or a zero mean
  double min = 0;
  double max = 0;
};

// Percentile by linear interpolation between closest ranks (the "type 7"
// definition of R and numpy's default), q in [0, 1]. Empty input gives 0.
double percentile(std::span<const double> samples, double q);

// The interpolated median, percentile(samples, 0.5): the mean of the two
// middle values for an even count.
double median(std::span<const double> samples);

SampleStats summarize(std::span<const double> samples);

// The half-width of the mean's 95% confidence interval relative to the mean
// (Student's t for small samples): 0.01 means the mean is known to within 1%.
// Infinite for fewer than 2 samples or a zero mean.
double relative_half_width(std::span<const double> samples);

// Student's t two-sided 97.5% quantile for `df` degrees of freedom (1.96
// beyond 30; infinite below 1): the factor relative_half_width uses.
double student_t975(int df);

// Mean and spread of one figure over several runs.
struct Spread {
  double mean = 0;
  double sd = 0;  // sample standard deviation; 0 for one run
  double min = 0;
  double max = 0;
  int runs = 0;
};
// Empty input gives runs = 0 and zeros.
Spread spread_of(std::span<const double> values);

}  // namespace fabricbench
