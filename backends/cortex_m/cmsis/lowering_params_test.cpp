#include "backends/cortex_m/cmsis/lowering_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backends/cortex_m/cmsis/cmsis_test_util.h"

namespace sdpa::cortex_m::cmsis {
namespace {

using testing::refusal;

void expect_qm(double x, int32_t multiplier, int32_t shift) {
  const QuantMultiplier qm = quantize_multiplier_aot(x);
  EXPECT_EQ(qm.multiplier, multiplier) << "x = " << x;
  EXPECT_EQ(qm.shift, shift) << "x = " << x;
}

TEST(CmsisLoweringParams, QuantizeMultiplierGolden) {
  expect_qm(0.0, 0, 0);
  expect_qm(0.01, 1374389535, -6);  // semantics §5 item 3: 0.01 = 0.64·2^-6
  expect_qm(0.5, 1 << 30, 0);
  expect_qm(1.0, 1 << 30, 1);
  expect_qm(0.1 * std::ldexp(1.0, 26), 1717986918, 23);
  expect_qm(-0.75, -1610612736, 0);
}

TEST(CmsisLoweringParams, QuantizeMultiplierRoundsToEvenAndCarries) {
  // m·2^31 = 2^30 + 0.5 and 2^30 + 1.5: Python round ties to even (std::round would give 2^30 + 1).
  expect_qm(0.5 + std::ldexp(1.0, -32), 1 << 30, 0);
  expect_qm(0.5 + 3 * std::ldexp(1.0, -32), (1 << 30) + 2, 0);
  // m·2^31 rounds up to 2^31: (2^30, e + 1).
  expect_qm(1.0 - std::ldexp(1.0, -33), 1 << 30, 1);
  expect_qm(std::ldexp(1.0 - std::ldexp(1.0, -33), -10), 1 << 30, -9);
  EXPECT_EQ(refusal<CmsisCheckFailed>([] { quantize_multiplier_aot(std::nan("")); }).operand, "x");
}

TEST(CmsisLoweringParams, RuntimeShiftLimitsArePlusMinus31) {
  validate_single_quant_params(std::numeric_limits<int32_t>::max(), 31, "x");
  validate_single_quant_params(std::numeric_limits<int32_t>::min(), -31, "x");
  for (int64_t s : {32, -32, 100}) {
    const CmsisFault f = refusal<CmsisCheckFailed>([s] { validate_single_quant_params(1 << 30, s, "Single quant Output"); });
    EXPECT_EQ(f.kernel, "validate_single_quant_params");
    EXPECT_EQ(f.operand, "shift");
    EXPECT_EQ(f.what, "Single quant Output shift must be in range [-31, 31] [Value: " + std::to_string(s) + "]");
  }
  const CmsisFault m = refusal<CmsisCheckFailed>([] { validate_single_quant_params(int64_t{1} << 31, 0, "softmax input"); });
  EXPECT_EQ(m.operand, "multiplier");
  EXPECT_EQ(m.what, "softmax input multiplier must be in int32 range [Value: 2147483648]");
  // A tiny scale: the AOT pass computes shift -40 without complaint; the runtime aborts.
  const QuantMultiplier tiny = quantize_multiplier_aot(std::ldexp(0.75, -40));
  EXPECT_EQ(tiny.shift, -40);
  EXPECT_EQ(refusal<CmsisCheckFailed>([&] { validate_single_quant_params(tiny.multiplier, tiny.shift, "x"); }).operand,
            "shift");
}

void expect_softmax_params(double s_in, int32_t mult, int32_t shift, int64_t diff_min) {
  const SoftmaxParams p = softmax_params(s_in);
  EXPECT_EQ(p.mult, mult) << "S_in = " << s_in;
  EXPECT_EQ(p.shift, shift) << "S_in = " << s_in;
  EXPECT_EQ(p.diff_min, diff_min) << "S_in = " << s_in;
  // diff_min = -floor(31·2^26 / 2^shift), here in integer arithmetic.
  EXPECT_EQ(p.diff_min, -((int64_t{31} << 26) >> p.shift)) << "S_in = " << s_in;
}

TEST(CmsisLoweringParams, SoftmaxParamsGolden) {
  // semantics §1.7 and §5 item 6.
  expect_softmax_params(0.1, 1717986918, 23, -248);
  expect_softmax_params(0.05, 1717986918, 22, -496);
  expect_softmax_params(1.0 / 16, 1073741824, 23, -248);
  expect_softmax_params(0.5, 1073741824, 26, -31);
  expect_softmax_params(16, 1073741824, 31, 0);
  for (double s : {32.0, 40.0, 1e6}) expect_softmax_params(s, 2147483647, 31, 0);
}

TEST(CmsisLoweringParams, SoftmaxOutputQParamsAreExactlyOneOver256AndMinus128) {
  check_softmax_output_qparams({1.0 / 256, -128});
  check_softmax_output_qparams({1.0 / 256 + 1e-13, -128});
  EXPECT_EQ(refusal<CmsisCheckFailed>([] {
              check_softmax_output_qparams({1.0 / 256 + 1e-11, -128});
            }).operand,
            "output scale");
  EXPECT_EQ(refusal<CmsisCheckFailed>([] {
              check_softmax_output_qparams({1.0 / 256, -127});
            }).operand,
            "output zero_point");
}

TEST(CmsisLoweringParams, BatchMatmulParamsGolden) {
  // semantics §5 item 3: S_l=0.02, zp_l=3, S_r=0.05, zp_r=-7, S_o=0.1, zp_o=-5.
  const BatchMatmulParams p = batch_matmul_params({0.02, 3}, {0.05, -7}, {0.1, -5});
  EXPECT_EQ(p.input_offset, -3);
  EXPECT_EQ(p.filter_offset, 7);
  EXPECT_EQ(p.output_offset, -5);
  EXPECT_EQ(p.multiplier, 1374389535);
  EXPECT_EQ(p.shift, -6);
  EXPECT_EQ(p.activation_min, -128);
  EXPECT_EQ(p.activation_max, 127);
}

TEST(CmsisLoweringParams, ElementwiseMulParamsNegateInputZeroPoints) {
  const ElementwiseMulParams p = elementwise_mul_params({0.5, 10}, {0.25, -20}, {0.25, 7});
  EXPECT_EQ(p.input_1_offset, -10);
  EXPECT_EQ(p.input_2_offset, 20);
  EXPECT_EQ(p.output_offset, 7);
  EXPECT_EQ(p.multiplier, 1 << 30);  // 0.5·0.25/0.25 = 0.5
  EXPECT_EQ(p.shift, 0);
  EXPECT_THROW(elementwise_mul_params({0.5, 128}, {0.25, 0}, {0.25, 0}), std::invalid_argument);
}

}  // namespace
}  // namespace sdpa::cortex_m::cmsis
