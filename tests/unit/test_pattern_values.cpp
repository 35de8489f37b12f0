// The pattern's values (fabricbench/pattern_values.hpp, shared by the host
// and the kernels) and the kernels' view of a correct output, checked on the
// host: runs without a GPU.
#include "fabricbench/transport/pattern_values.hpp"

#include <vector>

#include <gtest/gtest.h>

#include "fabricbench/transport/pattern.hpp"

namespace fabricbench {
namespace {

namespace pv = pattern_values;

// Every input, every reduced value and the garbage are exactly representable
// in their type: a store and a load give the same integer back.
TEST(PatternValues, EveryValueIsExactInItsType) {
  std::vector<std::byte> buf(8);
  const auto exact = [&buf](DType d, std::int64_t v) {
    pattern::store(d, buf, 0, v);
    bool ok = false;
    return pattern::load(d, buf, 0, &ok) == v && ok;
  };
  for (const Op op : all_ops())
    for (const DType d : all_dtypes())
      for (const RedOp r : {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg})
        for (const int n : {1, 2, 3, 4, 7, 8, 17, 130, 300})
          for (std::size_t i = 0; i < 260; ++i) {
            for (const int rank : {0, 1, n / 2, n - 1}) {
              if (rank >= n) continue;
              ASSERT_TRUE(exact(d, pv::input(op, r, d, rank, n, i)))
                  << name(op) << ' ' << name(d) << ' ' << name(r) << " n=" << n << " i=" << i;
            }
            // Sums switch to sparser patterns as the rank count grows, so
            // reductions stay exact for any count.
            ASSERT_TRUE(exact(d, pv::reduced(r, d, n, i))) << name(d) << ' ' << name(r) << " n=" << n;
          }
  for (const DType d : all_dtypes()) EXPECT_TRUE(exact(d, pv::garbage(d))) << name(d);
}

// An output made of pv::expected values passes the host check, and one
// changed element is caught.
TEST(PatternValues, ExpectedOutputPassesTheHostCheck) {
  for (const Op op : all_ops())
    for (const DType d : all_dtypes())
      for (const int n : {1, 3, 4})
        for (int rank = 0; rank < n; ++rank)
          for (const RedOp redop : {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max}) {
            const Counts c = counts_for(op, d, 64 * element_size(d) * static_cast<std::size_t>(n), n);
            const pv::Params p{op, d, redop, rank, n, 0, c.param, c.send, c.recv};
            std::vector<std::byte> out(std::max(c.recv, c.send) * element_size(d));
            const std::size_t elements = pv::output_elements(p);
            for (std::size_t i = 0; i < elements; ++i) pattern::store(d, out, i, pv::expected(p, i));
            ASSERT_EQ(pattern::count_wrong(op, d, redop, rank, n, 0, c, out), 0U) << name(op) << ' ' << name(d);
            if (elements == 0) continue;
            pattern::store(d, out, elements / 2, pattern::garbage_value(d));
            EXPECT_EQ(pattern::count_wrong(op, d, redop, rank, n, 0, c, out), 1U) << name(op) << ' ' << name(d);
          }
}

// reduced() counts whole cycles of ranks instead of visiting each one: it
// must give what the definition gives, rank by rank, for every count.
TEST(PatternValues, ReductionInConstantTimeMatchesTheRankByRankDefinition) {
  for (const DType d : all_dtypes())
    for (const RedOp r : {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg})
      for (const int n : {1, 2, 3, 4, 5, 6, 7, 8, 15, 16, 17, 30, 100, 101, 102, 127, 128, 129, 256, 300, 1000})
        for (std::size_t i = 0; i < 230; ++i)
          ASSERT_EQ(pv::reduced(r, d, n, i), pv::reduced_by_ranks(r, d, n, i))
              << name(d) << ' ' << name(r) << " n=" << n << " i=" << i;
}

// The host fill and check build one period and copy or compare whole blocks:
// every input and expected value repeats with pv::period.
TEST(PatternValues, InputsAndOutputsRepeatWithThePeriod) {
  for (const Op op : all_ops())
    for (const DType d : all_dtypes())
      for (const RedOp r : {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg})
        for (const int n : {1, 2, 3, 5, 8, 130, 300}) {
          const std::size_t period = pv::period(op, r, d, n);
          ASSERT_GE(period, 1U);
          for (const int rank : {0, n / 2, n - 1})
            for (std::size_t i = 0; i < 2 * period + 7; ++i)
              ASSERT_EQ(pv::input(op, r, d, rank, n, i), pv::input(op, r, d, rank, n, i + period))
                  << name(op) << ' ' << name(d) << ' ' << name(r) << " n=" << n << " i=" << i;
          if (!pv::reducing(op)) continue;
          for (std::size_t i = 0; i < 2 * period + 7; ++i)
            ASSERT_EQ(pv::reduced(r, d, n, i), pv::reduced(r, d, n, i + period)) << name(d) << ' ' << name(r);
        }
}

}  // namespace
}  // namespace fabricbench
