// The integer reference of arm_softmax_s8: the page's golden rows, then the
// kernel model bit for bit on random rows and input scales (two
// implementations of §2.2 that hold each other).
#include "backends/cortex_m/softmax_s8_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backends/cortex_m/cmsis/lowering_params.h"
#include "backends/cortex_m/cmsis/softmax_s8.h"

namespace sdpa::cortex_m {
namespace {

std::vector<int64_t> reference_row(const std::vector<int64_t>& row, double s_in) {
  const cmsis::SoftmaxParams p = cmsis::softmax_params(s_in);
  return softmax_s8_reference(row, p.mult, p.shift, p.diff_min);
}

// semantics §2.2: S_in = 0.1, params (1717986918, 23, -248); uniform rows.
TEST(SoftmaxS8Reference, GivesThePagesGoldenRows) {
  const cmsis::SoftmaxParams p = cmsis::softmax_params(0.1);
  EXPECT_EQ(p.mult, 1717986918);
  EXPECT_EQ(p.shift, 23);
  EXPECT_EQ(p.diff_min, -248);
  EXPECT_EQ(reference_row({10, 0, -10, -128}, 0.1), (std::vector<int64_t>{42, -65, -105, -128}));
  for (const auto& [n, want] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 127}, {2, 0}, {3, -43}, {4, -64}, {256, -127}, {511, -127}})
    EXPECT_EQ(reference_row(std::vector<int64_t>(n, 7), 0.1), std::vector<int64_t>(n, want)) << n;
}

TEST(SoftmaxS8Reference, AgreesWithTheKernelModelBitForBit) {
  std::mt19937_64 rng(20261207);
  std::uniform_int_distribution<int> length(1, 200);
  std::uniform_real_distribution<double> log_scale(std::log(0.002), std::log(40.0));
  int64_t rows = 0, elements = 0;
  for (int t = 0; t < 3000; ++t) {
    const double s_in = std::exp(log_scale(rng));
    const int n = length(rng);
    std::vector<int8_t> row(static_cast<size_t>(n));
    std::vector<int64_t> wide(static_cast<size_t>(n));
    // Codes in [top - spread + 1, top]: narrow rows too, with many ties at the max.
    const int spread = 1 + t % 256, top = -128 + spread - 1 + t % (256 - spread + 1);
    std::uniform_int_distribution<int> below(0, spread - 1);
    for (int i = 0; i < n; ++i) wide[i] = row[i] = static_cast<int8_t>(top - below(rng));
    const std::vector<int8_t> got = cmsis::arm_softmax_s8(row, 1, n, cmsis::softmax_params(s_in));
    const std::vector<int64_t> want = reference_row(wide, s_in);
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << "S_in " << s_in << " row " << t << " element " << i;
    ++rows;
    elements += n;
  }
  EXPECT_EQ(rows, 3000);
  EXPECT_GT(elements, 100000);
}

}  // namespace
}  // namespace sdpa::cortex_m
