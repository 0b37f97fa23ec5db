#include "backends/cortex_m/cmsis/batch_matmul_s8.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cortex_m/cmsis/cmsis_test_util.h"
#include "backends/cortex_m/cmsis/lowering_params.h"

namespace sdpa::cortex_m::cmsis {
namespace {

using testing::refusal;
using testing::round_clamp;

TEST(CmsisBatchMatmulS8, HandComputedWithOffsetsAndDoubleRounding) {
  // lhs [1,1,2] = (3, -1), zp_l = 1; rhs_t [1,2,2] rows (2, 4) and (-3, 0), zp_r = -1:
  // acc = (2)(3) + (-2)(5) = -4 and (2)(-2) + (-2)(1) = -6; ×0.25 = -1 and -1.5 → -2; + zp_o 10.
  BatchMatmulParams p;
  p.input_offset = -1;
  p.filter_offset = 1;
  p.output_offset = 10;
  p.multiplier = 1 << 30;
  p.shift = -1;
  EXPECT_EQ(arm_batch_matmul_s8({3, -1}, {2, 4, -3, 0}, {1, 1, 2, 2}, p), (std::vector<int8_t>{9, 8}));
  p.output_offset = 127;  // -1 and -2 from 127: nothing clamps
  EXPECT_EQ(arm_batch_matmul_s8({3, -1}, {2, 4, -3, 0}, {1, 1, 2, 2}, p), (std::vector<int8_t>{126, 125}));
  p.output_offset = -127;
  EXPECT_EQ(arm_batch_matmul_s8({3, -1}, {2, 4, -3, 0}, {1, 1, 2, 2}, p), (std::vector<int8_t>{-128, -128}));
}

TEST(CmsisBatchMatmulS8, IndexesBatchRowsAndTransposedColumns) {
  // B = 2, M = 2, N = 3, K = 1 with ×1 (M = 2^30, s = 1) and no offsets: out[b,m,n] = lhs[b,m]·rhs_t[b,n].
  BatchMatmulParams p;
  p.multiplier = 1 << 30;
  p.shift = 1;
  const std::vector<int8_t> lhs = {1, 2, 3, 4}, rhs_t = {1, 10, -10, 2, -3, 5};
  EXPECT_EQ(arm_batch_matmul_s8(lhs, rhs_t, {2, 2, 3, 1}, p),
            (std::vector<int8_t>{1, 10, -10, 2, 20, -20, 6, -9, 15, 8, -12, 20}));
  // K = 3, M = 1, N = 2: each output is a dot product over k of lhs row and rhs_t row.
  EXPECT_EQ(arm_batch_matmul_s8({1, 2, 3}, {1, 0, 0, 0, 1, 1}, {1, 1, 2, 3}, p), (std::vector<int8_t>{1, 5}));
}

TEST(CmsisBatchMatmulS8, LoweredParamsGolden) {
  // semantics §5 items 3-4: bmm([2,4,8],[2,8,3]) params on a fixed input, checked by hand:
  // (l - 3)(r + 7) summed over k = 8 ones: lhs all 4, rhs_t all -5: acc = 8·1·2 = 16; ×0.01 = 0.16 → 0; -5.
  const BatchMatmulParams p = batch_matmul_params({0.02, 3}, {0.05, -7}, {0.1, -5});
  const std::vector<int8_t> out =
      arm_batch_matmul_s8(std::vector<int8_t>(2 * 4 * 8, 4), std::vector<int8_t>(2 * 3 * 8, -5), {2, 4, 3, 8}, p);
  EXPECT_EQ(out, std::vector<int8_t>(2 * 4 * 3, -5));
  // lhs all 127, rhs_t all 127: acc = 8·124·134 = 132928, ×0.01 = 1329.28 → clamps to 127.
  EXPECT_EQ(arm_batch_matmul_s8(std::vector<int8_t>(64, 127), std::vector<int8_t>(48, 127), {2, 4, 3, 8}, p),
            std::vector<int8_t>(24, 127));
  // lhs all -128, rhs_t all 93: acc = 8·(-131)(100) = -104800, ×0.01 → -1048 - 5 clamps to -128.
  EXPECT_EQ(arm_batch_matmul_s8(std::vector<int8_t>(64, -128), std::vector<int8_t>(48, 93), {2, 4, 3, 8}, p),
            std::vector<int8_t>(24, -128));
  // lhs all 8, rhs_t all -2: acc = 8·5·5 = 200, ×0.01 = 2 → -3.
  EXPECT_EQ(arm_batch_matmul_s8(std::vector<int8_t>(64, 8), std::vector<int8_t>(48, -2), {2, 4, 3, 8}, p),
            std::vector<int8_t>(24, -3));
}

TEST(CmsisBatchMatmulS8, LongAccumulationOverflowIsUndefined) {
  // Every term (-128 - 127)·(-128 - 127) = 65025: K = 33026 terms pass INT32_MAX.
  BatchMatmulParams p;
  p.input_offset = -127;
  p.filter_offset = -127;
  p.multiplier = 1 << 30;
  p.shift = -20;
  const int64_t k = 33026;
  const CmsisFault f = refusal([&] {
    arm_batch_matmul_s8(std::vector<int8_t>(k, -128), std::vector<int8_t>(k, -128), {1, 1, 1, k}, p);
  });
  EXPECT_EQ(f.kernel, "arm_batch_matmul_s8");
  EXPECT_EQ(f.operand, "acc[0,0,0]");
  // One term fewer fits.
  EXPECT_NO_THROW(
      arm_batch_matmul_s8(std::vector<int8_t>(k - 1, -128), std::vector<int8_t>(k - 1, -128), {1, 1, 1, k - 1}, p));
}

TEST(CmsisBatchMatmulS8, MveVectorSumOverflowIsUndefined) {
  // lhs = zp_l = -128 makes every term 0, but the MVE path's vector sum
  // input_offset·Σ(rhs + filter_offset) = 128·255·K passes INT32_MAX at K = 65794.
  BatchMatmulParams p;
  p.input_offset = 128;
  p.filter_offset = 128;
  p.multiplier = 1 << 30;
  const int64_t k = 65794;
  const CmsisFault f = refusal([&] {
    arm_batch_matmul_s8(std::vector<int8_t>(k, -128), std::vector<int8_t>(k, 127), {1, 1, 1, k}, p);
  });
  EXPECT_EQ(f.kernel, "arm_batch_matmul_s8");
  EXPECT_EQ(f.operand, "vector_sum[0,0]");
}

TEST(CmsisBatchMatmulS8, RequantizeRefusalsNameTheAccumulator) {
  BatchMatmulParams p;
  p.multiplier = 1 << 30;
  p.shift = 18;  // acc[0,0,0] = 127 is fine, acc[0,1,0] = 127·127 = 16129 · 2^18 > INT32_MAX
  const CmsisFault f = refusal([&] { arm_batch_matmul_s8({1, 127, 127}, {127}, {1, 3, 1, 1}, p); });
  EXPECT_EQ(f.kernel, "arm_batch_matmul_s8");
  EXPECT_EQ(f.operand, "acc[0,1,0]·2^shift");
  p.shift = -32;
  EXPECT_EQ(refusal([&] { arm_batch_matmul_s8({1}, {1}, {1, 1, 1, 1}, p); }).operand, "shift");
  p.shift = 0;
  p.activation_min = -129;
  EXPECT_EQ(refusal([&] { arm_batch_matmul_s8({1}, {1}, {1, 1, 1, 1}, p); }).operand, "activation_min/activation_max");
  EXPECT_THROW(arm_batch_matmul_s8({1, 2}, {1}, {1, 1, 1, 1}, BatchMatmulParams{}), std::invalid_argument);
}

// NUMERICS.md: bmm within 1 LSB of round_half_even(acc·S_l·S_r/S_o) + zp_o (semantics §2.3).
RC_GTEST_PROP(CmsisBatchMatmulS8, WithinOneLsbOfFloatReference, ()) {
  const BatchMatmulDims d{*rc::gen::inRange(1, 4), *rc::gen::inRange(1, 6), *rc::gen::inRange(1, 6),
                          *rc::gen::inRange(1, 40)};
  const QParams l{*rc::gen::inRange(1, 200) / 1000.0, *rc::gen::inRange(-128, 128)};
  const QParams r{*rc::gen::inRange(1, 200) / 1000.0, *rc::gen::inRange(-128, 128)};
  const QParams o{*rc::gen::inRange(1, 1000) / 1000.0, *rc::gen::inRange(-128, 128)};
  const auto lhs = *rc::gen::container<std::vector<int8_t>>(d.batch * d.m * d.k, rc::gen::arbitrary<int8_t>());
  const auto rhs_t = *rc::gen::container<std::vector<int8_t>>(d.batch * d.n * d.k, rc::gen::arbitrary<int8_t>());
  const std::vector<int8_t> got = arm_batch_matmul_s8(lhs, rhs_t, d, batch_matmul_params(l, r, o));
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t m = 0; m < d.m; ++m)
      for (int64_t n = 0; n < d.n; ++n) {
        int64_t acc = 0;
        for (int64_t k = 0; k < d.k; ++k)
          acc += (lhs[(b * d.m + m) * d.k + k] - l.zero_point) * (rhs_t[(b * d.n + n) * d.k + k] - r.zero_point);
        const int want = round_clamp(static_cast<long double>(acc) * l.scale * r.scale / o.scale + o.zero_point);
        RC_ASSERT(std::abs(got[(b * d.m + m) * d.n + n] - want) <= 1);
      }
}

}  // namespace
}  // namespace sdpa::cortex_m::cmsis
