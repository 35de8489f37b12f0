// The kernels' pattern (kernels/pattern_values.hpp) against the host
// reference (pattern.cpp), value for value: runs without a GPU.
#include "pattern_values.hpp"

#include <vector>

#include <gtest/gtest.h>

#include "fabricbench/pattern.hpp"

namespace fabricbench {
namespace {

namespace pv = pattern_values;

TEST(PatternValues, InputsAndReductionsMatchTheHost) {
  for (const Op op : all_ops())
    for (const DType d : all_dtypes())
      for (const RedOp r : {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg})
        for (const int n : {1, 2, 3, 4, 7, 8, 130, 300})
          for (std::size_t i = 0; i < 260; i += 1) {
            for (const int rank : {0, 1, n / 2, n - 1}) {
              if (rank >= n) continue;
              ASSERT_EQ(pv::input(op, r, d, rank, n, i), pattern::input_value(op, r, d, rank, n, i))
                  << name(op) << ' ' << name(d) << ' ' << name(r) << " n=" << n << " i=" << i;
            }
            ASSERT_EQ(pv::reduced(r, d, n, i), pattern::reduced_value(r, d, n, i));
          }
  for (const DType d : all_dtypes()) EXPECT_EQ(pv::garbage(d), pattern::garbage_value(d));
}

// An output made of pv::expected values passes the host check, and one
// changed element is caught.
TEST(PatternValues, ExpectedOutputPassesTheHostCheck) {
  for (const Op op : all_ops())
    for (const DType d : {DType::int8, DType::int32, DType::float32, DType::bfloat16})
      for (const int n : {1, 3, 4})
        for (int rank = 0; rank < n; ++rank) {
          const RedOp redop = RedOp::sum;
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

}  // namespace
}  // namespace fabricbench
