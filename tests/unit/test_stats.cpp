#include "fabricbench/core/stats.hpp"

#include <vector>

#include <gtest/gtest.h>

namespace fabricbench {
namespace {

TEST(Percentile, LinearInterpolationBetweenClosestRanks) {
  const std::vector<double> v{4, 1, 3, 2, 5};
  EXPECT_DOUBLE_EQ(percentile(v, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(percentile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 1.0), 5.0);
  EXPECT_DOUBLE_EQ(percentile(v, 0.25), 2.0);
  EXPECT_DOUBLE_EQ(percentile(v, 0.99), 4.96);  // numpy.percentile(v, 99)
  const std::vector<double> even{1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile(even, 0.5), 2.5);
}

TEST(Percentile, EmptyAndSingle) {
  EXPECT_EQ(percentile({}, 0.5), 0.0);
  const std::vector<double> one{7};
  EXPECT_EQ(percentile(one, 0.99), 7.0);
}

TEST(Summarize, MeanSpreadAndCv) {
  const std::vector<double> v{2, 4, 4, 4, 5, 5, 7, 9};
  const SampleStats s = summarize(v);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
  EXPECT_DOUBLE_EQ(s.p50, 4.5);
  // Sample standard deviation sqrt(32/7) over the mean 5.
  EXPECT_NEAR(s.cv, 0.42761798705987, 1e-12);
}

TEST(Summarize, ConstantSamplesHaveNoSpread) {
  const std::vector<double> v(10, 3.0);
  const SampleStats s = summarize(v);
  EXPECT_EQ(s.cv, 0.0);
  EXPECT_EQ(s.p99, 3.0);
  const std::vector<double> one{3.0};
  EXPECT_EQ(summarize(one).cv, 0.0);
}

TEST(Median, IsTheInterpolatedOneEverywhere) {
  // An even count: the mean of the two middle values, not the upper one.
  const std::vector<double> even{10, 40, 20, 30};
  EXPECT_DOUBLE_EQ(median(even), 25.0);
  const std::vector<double> odd{3, 1, 2};
  EXPECT_DOUBLE_EQ(median(odd), 2.0);
  EXPECT_EQ(median({}), 0.0);
}

TEST(SpreadOf, MeanSampleSdAndRange) {
  const std::vector<double> v{2, 4, 4, 4, 5, 5, 7, 9};
  const Spread s = spread_of(v);
  EXPECT_EQ(s.runs, 8);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_NEAR(s.sd, 2.13808993529940, 1e-12);  // sqrt(32/7)
  EXPECT_EQ(s.min, 2.0);
  EXPECT_EQ(s.max, 9.0);
  const std::vector<double> one{3.5};
  EXPECT_EQ(spread_of(one).sd, 0.0);
  EXPECT_EQ(spread_of({}).runs, 0);
}

}  // namespace
}  // namespace fabricbench
