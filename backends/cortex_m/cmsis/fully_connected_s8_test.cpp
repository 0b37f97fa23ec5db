#include "backends/cortex_m/cmsis/fully_connected_s8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backends/cortex_m/cmsis/cmsis_test_util.h"
#include "backends/cortex_m/cmsis/lowering_params.h"

namespace sdpa::cortex_m::cmsis {
namespace {

using testing::refusal;
using testing::round_clamp;

TEST(CmsisFullyConnectedS8, HandComputedWithOffsetBiasAndDoubleRounding) {
  // input [1,2] = (3, -1), zp_in = 1 (input_offset -1); weight rows (2, 4) and (-3, 0); bias (1, -2):
  // acc = 2·2 + (-2)·4 + 1 = -3 and 2·(-3) + 0 - 2 = -8; ×0.25 = -0.75 → -1 and -2; + zp_o 10.
  FullyConnectedParams p;
  p.input_offset = -1;
  p.output_offset = 10;
  p.multiplier = 1 << 30;
  p.shift = -1;
  EXPECT_EQ(arm_fully_connected_s8({3, -1}, {2, 4, -3, 0}, {1, -2}, {1, 2, 2}, p), (std::vector<int8_t>{9, 8}));
  // Without a bias: -4 and -6 → -1 and -1.5 → -2 (half away from zero).
  EXPECT_EQ(arm_fully_connected_s8({3, -1}, {2, 4, -3, 0}, {}, {1, 2, 2}, p), (std::vector<int8_t>{9, 8}));
  p.output_offset = -127;
  EXPECT_EQ(arm_fully_connected_s8({3, -1}, {2, 4, -3, 0}, {1, -2}, {1, 2, 2}, p), (std::vector<int8_t>{-128, -128}));
}

TEST(CmsisFullyConnectedS8, RowsIndexTheInputAndWeightRowsTheOutputs) {
  // ×1 (M = 2^30, s = 1), no offsets: out[r,n] = Σ_k input[r,k]·weight[n,k].
  FullyConnectedParams p;
  p.multiplier = 1 << 30;
  p.shift = 1;
  EXPECT_EQ(arm_fully_connected_s8({1, 2, 3, 4}, {1, 0, 0, 1, 1, 1}, {}, {2, 3, 2}, p),
            (std::vector<int8_t>{1, 2, 3, 3, 4, 7}));
}

// Within 1 LSB of the fake-quantized result round((acc)·S_in·S_w/S_o) + zp_o
// (§2.3's bound for the same requantization), over random sizes and qparams.
TEST(CmsisFullyConnectedS8, WithinOneLsbOfItsFakeQuantizedTwin) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> code(-128, 127), wcode(-127, 127), dim(1, 16), zp(-128, 127);
  std::uniform_real_distribution<double> scale(1e-3, 1.0);
  for (int t = 0; t < 300; ++t) {
    const FullyConnectedDims d{dim(rng), dim(rng), dim(rng)};
    const QParams in{scale(rng), zp(rng)}, out{scale(rng) * 10, zp(rng)};
    const double sw = scale(rng) / 10;
    std::vector<int8_t> x(d.rows * d.k), w(d.n * d.k);
    std::vector<int32_t> b(d.n);
    for (auto& v : x) v = static_cast<int8_t>(code(rng));
    for (auto& v : w) v = static_cast<int8_t>(wcode(rng));
    for (auto& v : b) v = code(rng) * 100;
    const FullyConnectedParams p = fully_connected_params(in, sw, out);
    const std::vector<int8_t> got = arm_fully_connected_s8(x, w, b, d, p);
    for (int64_t r = 0; r < d.rows; ++r)
      for (int64_t n = 0; n < d.n; ++n) {
        long double acc = b[n];
        for (int64_t k = 0; k < d.k; ++k) acc += (x[r * d.k + k] - in.zero_point) * static_cast<long double>(w[n * d.k + k]);
        const int want = round_clamp(acc * in.scale * sw / out.scale + out.zero_point);
        ASSERT_LE(std::abs(got[r * d.n + n] - want), 1) << "case " << t << " at [" << r << "," << n << "]";
      }
  }
}

TEST(CmsisFullyConnectedS8, AnAccumulatorThatCanOverflowIsRefusedNamingIt) {
  FullyConnectedParams p;
  p.multiplier = 1 << 30;
  p.input_offset = 0;
  const int64_t k = 140000;  // 140000·127·127 > 2^31
  const CmsisFault f = refusal([&] {
    arm_fully_connected_s8(std::vector<int8_t>(k, 127), std::vector<int8_t>(k, 127), {}, {1, 1, k}, p);
  });
  EXPECT_EQ(f.kernel, "arm_fully_connected_s8");
  EXPECT_EQ(f.operand, "acc[0,0]");  // the kernel sum input_offset·Σ w = 0 fits; the accumulator does not
  p.input_offset = 128;  // zp_in = -128: the kernel sum 128·Σ w = 128·127·140000 overflows first
  EXPECT_EQ(refusal([&] {
              arm_fully_connected_s8(std::vector<int8_t>(k, 127), std::vector<int8_t>(k, 127), {}, {1, 1, k}, p);
            }).operand,
            "kernel_sum[0]");
}

}  // namespace
}  // namespace sdpa::cortex_m::cmsis
