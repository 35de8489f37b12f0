#include "fabricbench/core/sizes.hpp"

#include <cmath>

#include <gtest/gtest.h>

namespace fabricbench {
namespace {

TEST(ParseSize, PlainAndBinarySuffixes) {
  EXPECT_EQ(parse_size("8"), 8U);
  EXPECT_EQ(parse_size("1K"), 1024U);
  EXPECT_EQ(parse_size("1k"), 1024U);
  EXPECT_EQ(parse_size("64M"), 64U << 20);
  EXPECT_EQ(parse_size("2G"), std::size_t{2} << 30);
  EXPECT_EQ(parse_size("16B"), 16U);
  EXPECT_EQ(parse_size("4KiB"), 4096U);
  EXPECT_EQ(parse_size("12MiB"), 12U << 20);
  EXPECT_EQ(parse_size("1GiB"), std::size_t{1} << 30);
}

TEST(ParseSize, RejectsWhatIsNotASize) {
  for (const char* bad : {"", "K", "-8", "1.5M", "8X", "8 M", "99999999999999999999", "17179869184G", "1KIB", "1Mi"})
    EXPECT_FALSE(parse_size(bad)) << bad;
}

TEST(ParseSize, RejectsAmbiguousUnitsWithTheReason) {
  for (const char* ambiguous : {"4KB", "1MB", "1kb", "2Gb", "8b"}) {
    EXPECT_FALSE(parse_size(ambiguous)) << ambiguous;
    EXPECT_NE(size_error(ambiguous).find("is ambiguous"), std::string::npos) << size_error(ambiguous);
  }
  EXPECT_EQ(size_error("1MB"),
            "'1MB' is ambiguous (MB means 10^n bytes to some, 2^n or bits to others): write 1M or 1MiB, both binary");
  EXPECT_EQ(size_error("7X"), "'7X' is not a size (bytes, or a binary K/M/G or KiB/MiB/GiB suffix, e.g. 64M = 64MiB)");
}

TEST(FormatSize, ReadableUnits) {
  EXPECT_EQ(format_size(8), "8 B");
  EXPECT_EQ(format_size(65536), "64 KiB");
  EXPECT_EQ(format_size(1536 * 1024), "1.5 MiB");
  EXPECT_EQ(format_size(std::size_t{1} << 30), "1 GiB");
}

TEST(SizeLadder, GeometricLikeNcclTests) {
  EXPECT_EQ(size_ladder(8, 128, 2.0), (std::vector<std::size_t>{8, 16, 32, 64, 128}));
  // The maximum is included only when a step lands on it, as nccl-tests.
  EXPECT_EQ(size_ladder(8, 100, 4.0), (std::vector<std::size_t>{8, 32}));
  EXPECT_EQ(size_ladder(64, 64, 2.0), (std::vector<std::size_t>{64}));
}

TEST(SizeLadder, StepsStayAlignedAndAlwaysGrow) {
  const auto sizes = size_ladder(8, 64, 1.1, 4);
  ASSERT_FALSE(sizes.empty());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(sizes[i] % 4, 0U);
    if (i > 0) {
      EXPECT_GT(sizes[i], sizes[i - 1]);
    }
  }
  EXPECT_EQ(sizes.front(), 8U);
  EXPECT_EQ(sizes.back(), 64U);
  EXPECT_EQ(size_ladder(8, 48, 1.5, 4), (std::vector<std::size_t>{8, 12, 16, 24, 36}));
}

TEST(SizeLadder, InvalidArgumentsGiveNothing) {
  EXPECT_TRUE(size_ladder(64, 8, 2.0).empty());
  EXPECT_TRUE(size_ladder(8, 64, 1.0).empty());
  EXPECT_TRUE(size_ladder(8, 64, 2.0, 0).empty());
}

TEST(SizeLadder, StopsAfterItsLimitSoAFactorNearOneCannotRunAway) {
  // -f 1.0000001 from 8 B to 64 MiB would be 16 million sizes.
  const auto sizes = size_ladder(8, std::size_t{64} << 20, 1.0000001, 4);
  EXPECT_EQ(sizes.size(), max_ladder_sizes + 1);
  EXPECT_TRUE(size_ladder(8, 64, std::nan("")).empty());
}

}  // namespace
}  // namespace fabricbench
