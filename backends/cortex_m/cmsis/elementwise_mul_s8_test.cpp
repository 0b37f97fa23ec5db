#include "backends/cortex_m/cmsis/elementwise_mul_s8.h"

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

TEST(CmsisElementwiseMulS8, HandComputed) {
  // (3 - 1)·(-5 + 2) = -6, ×0.25 = -1.5 → -2 (away from zero), + 4 = 2;
  // (127 - 1)·(127 + 2) = 16254, ×0.25 = 4063.5 → clamps to 127; (1 - 1)·x = 0 → 4.
  ElementwiseMulParams p;
  p.input_1_offset = -1;
  p.input_2_offset = 2;
  p.output_offset = 4;
  p.multiplier = 1 << 30;
  p.shift = -1;
  EXPECT_EQ(arm_elementwise_mul_s8({3, 127, 1}, {-5, 127, -128}, p), (std::vector<int8_t>{2, 127, 4}));
  p.output_offset = -128;
  EXPECT_EQ(arm_elementwise_mul_s8({3, -128}, {-5, 127}, p), (std::vector<int8_t>{-128, -128}));
}

// A left shift past int32 (S_a·S_b/S_o >= 1): (127 + 128)^2·2^20 overflows.
// Undefined by default; wrapped (overflow=wrap) it is 0xE0100000, negative, so
// the output clamps to -128 where the real product saturates at 127.
TEST(CmsisElementwiseMulS8, LeftShiftOverflowWrapsOnlyWhenAskedTo) {
  ElementwiseMulParams p;
  p.input_1_offset = p.input_2_offset = 128;
  p.multiplier = 1 << 30;
  p.shift = 20;
  EXPECT_EQ(refusal([&] { arm_elementwise_mul_s8({127}, {127}, p); }).operand, "product[0]·2^shift");
  p.overflow = Overflow::wrap;
  EXPECT_EQ(arm_elementwise_mul_s8({127, -128}, {127, 5}, p), (std::vector<int8_t>{-128, 0}));
}

TEST(CmsisElementwiseMulS8, UsesDoubleRounding) {
  // 1·1 × 0.375: double rounding gives 1 (0.75 → 1, then 0.5 → 1); single rounding would give 0.
  ElementwiseMulParams p;
  p.multiplier = 1610612736;  // 0.75·2^31
  p.shift = -1;
  EXPECT_EQ(arm_elementwise_mul_s8({1, -1}, {1, 1}, p), (std::vector<int8_t>{1, -1}));
}

TEST(CmsisElementwiseMulS8, RefusalsNameTheElement) {
  ElementwiseMulParams p;
  p.multiplier = 1 << 30;
  p.shift = 31;  // only a zero product is defined
  EXPECT_EQ(arm_elementwise_mul_s8({0, 5}, {9, 0}, p), (std::vector<int8_t>{0, 0}));
  const CmsisFault f = refusal([&] { arm_elementwise_mul_s8({0, 5, 2}, {9, 0, 3}, p); });
  EXPECT_EQ(f.kernel, "arm_elementwise_mul_s8");
  EXPECT_EQ(f.operand, "product[2]·2^shift");
  p.shift = 0;
  p.input_1_offset = 2147483600;
  EXPECT_EQ(refusal([&] { arm_elementwise_mul_s8({127}, {1}, p); }).operand, "input_1_offset");
  p.input_1_offset = 100000;
  p.input_2_offset = 100000;
  EXPECT_EQ(refusal([&] { arm_elementwise_mul_s8({0, 1}, {-100000 % 128, 1}, p); }).operand, "product[0]");
  EXPECT_THROW(arm_elementwise_mul_s8({1}, {1, 2}, ElementwiseMulParams{}), std::invalid_argument);
}

// NUMERICS.md: elementwise mul within 1 LSB of round_half_even((a - zp_a)(b - zp_b)·S_a·S_b/S_o) + zp_o.
RC_GTEST_PROP(CmsisElementwiseMulS8, WithinOneLsbOfFloatReference, ()) {
  const QParams qa{*rc::gen::inRange(1, 500) / 1000.0, *rc::gen::inRange(-128, 128)};
  const QParams qb{*rc::gen::inRange(1, 500) / 1000.0, *rc::gen::inRange(-128, 128)};
  const QParams qo{*rc::gen::inRange(1, 2000) / 1000.0, *rc::gen::inRange(-128, 128)};
  const int n = *rc::gen::inRange(1, 64);
  const auto a = *rc::gen::container<std::vector<int8_t>>(n, rc::gen::arbitrary<int8_t>());
  const auto b = *rc::gen::container<std::vector<int8_t>>(n, rc::gen::arbitrary<int8_t>());
  const std::vector<int8_t> got = arm_elementwise_mul_s8(a, b, elementwise_mul_params(qa, qb, qo));
  for (int i = 0; i < n; ++i) {
    const long double real =
        static_cast<long double>(a[i] - qa.zero_point) * (b[i] - qb.zero_point) * qa.scale * qb.scale / qo.scale;
    RC_ASSERT(std::abs(got[i] - round_clamp(real + qo.zero_point)) <= 1);
  }
}

}  // namespace
}  // namespace sdpa::cortex_m::cmsis
