#include "backends/cortex_m/cmsis/fixed_point.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backends/cortex_m/cmsis/cmsis_test_util.h"

namespace sdpa::cortex_m::cmsis {
namespace {

using testing::refusal;

constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax = std::numeric_limits<int32_t>::max();

TEST(CmsisFixedPoint, DoublingHighMultRoundsHalfTowardPlusInfinity) {
  // a·b/2^31 = ±0.5 and ±1.5: half toward +inf, not half away from zero.
  EXPECT_EQ(doubling_high_mult(1, 1 << 30), 1);
  EXPECT_EQ(doubling_high_mult(-1, 1 << 30), 0);
  EXPECT_EQ(doubling_high_mult(3, 1 << 30), 2);
  EXPECT_EQ(doubling_high_mult(-3, 1 << 30), -1);
  EXPECT_EQ(doubling_high_mult(1 << 30, -3), -1);  // the sign of the product, not of one operand
  EXPECT_EQ(doubling_high_mult(0, -5), 0);
  EXPECT_EQ(doubling_high_mult(1 << 30, 1 << 30), 1 << 29);
}

TEST(CmsisFixedPoint, DoublingHighMultSaturatesOnlyMinTimesMin) {
  EXPECT_EQ(doubling_high_mult(kMin, kMin), kMax);
  EXPECT_EQ(doubling_high_mult(kMin, kMax), kMin + 1);
  EXPECT_EQ(doubling_high_mult(kMax, kMax), kMax - 1);
  EXPECT_EQ(doubling_high_mult(kMin, kMin + 1), kMax);
}

TEST(CmsisFixedPoint, DoublingHighMultNoSatRefusesTheResultTwoToThe31) {
  EXPECT_EQ(doubling_high_mult_no_sat(-1, 1 << 30), 0);
  EXPECT_EQ(doubling_high_mult_no_sat(kMin, kMin + 1), kMax);
  const CmsisFault f = refusal([] { doubling_high_mult_no_sat(kMin, kMin); });
  EXPECT_EQ(f.kernel, "arm_nn_doubling_high_mult_no_sat");
  EXPECT_EQ(f.operand, "a·b");
}

TEST(CmsisFixedPoint, DivideByPowerOfTwoRoundsHalfAwayFromZero) {
  EXPECT_EQ(divide_by_power_of_two(5, 1), 3);
  EXPECT_EQ(divide_by_power_of_two(-5, 1), -3);
  EXPECT_EQ(divide_by_power_of_two(3, 1), 2);
  EXPECT_EQ(divide_by_power_of_two(-3, 1), -2);
  EXPECT_EQ(divide_by_power_of_two(6, 2), 2);    // 1.5
  EXPECT_EQ(divide_by_power_of_two(-6, 2), -2);  // -1.5
  EXPECT_EQ(divide_by_power_of_two(5, 2), 1);    // 1.25
  EXPECT_EQ(divide_by_power_of_two(-5, 2), -1);
  EXPECT_EQ(divide_by_power_of_two(-7, 2), -2);  // -1.75
  EXPECT_EQ(divide_by_power_of_two(-77, 0), -77);
  EXPECT_EQ(divide_by_power_of_two(1 << 30, 31), 1);  // 0.5
  EXPECT_EQ(divide_by_power_of_two(-(1 << 30), 31), -1);
  EXPECT_EQ(divide_by_power_of_two(kMin, 31), -1);
  EXPECT_EQ(divide_by_power_of_two(kMax, 12), 1 << 19);  // exp(0) in the Q12.19 sum
}

TEST(CmsisFixedPoint, DivideByPowerOfTwoRefusesExponentsOutside0To31) {
  for (int32_t e : {32, 33, -1}) {
    const CmsisFault f = refusal([e] { divide_by_power_of_two(1000, e); });
    EXPECT_EQ(f.kernel, "arm_nn_divide_by_power_of_two");
    EXPECT_EQ(f.operand, "exponent");
  }
}

TEST(CmsisFixedPoint, MultByPowerOfTwoSaturates) {
  EXPECT_EQ(mult_by_power_of_two(3, 2), 12);
  EXPECT_EQ(mult_by_power_of_two(1 << 30, 1), kMax);
  EXPECT_EQ(mult_by_power_of_two(-(1 << 30), 1), kMin);
  EXPECT_EQ(mult_by_power_of_two(-(1 << 30) - 1, 1), kMin);
  EXPECT_EQ(refusal([] { mult_by_power_of_two(1, 31); }).operand, "exponent");
}

TEST(CmsisFixedPoint, LeftShiftAsCRefusesSignedOverflow) {
  EXPECT_EQ(shift_left_as_c(1 << 29, 1, "k", "v"), 1 << 30);
  EXPECT_EQ(shift_left_as_c(-(1 << 30), 1, "k", "v"), kMin);
  EXPECT_EQ(shift_left_as_c(0, 31, "k", "v"), 0);
  for (auto [v, s] : {std::pair{1 << 30, 1}, {1, 31}, {-1, 31}, {-255, 24}}) {
    const CmsisFault f = refusal([v = v, s = s] { shift_left_as_c(v, s, "some_kernel", "x[3]"); });
    EXPECT_EQ(f.kernel, "some_kernel");
    EXPECT_EQ(f.operand, "x[3]");
  }
  EXPECT_EQ(refusal([] { shift_left_as_c(1, 32, "some_kernel", "x"); }).operand, "shift");
  EXPECT_EQ(refusal([] { shift_left_as_c(1, -1, "some_kernel", "x"); }).operand, "shift");
}

TEST(CmsisFixedPoint, ExpOnNegativeValuesIsExpInQ0_31) {
  EXPECT_EQ(exp_on_negative_values(0), kMax);
  // Q5.26 inputs from -2^-26 to -31.99: the result is exp(z) in Q0.31 within the fourth-order Taylor
  // polynomial's error on [-1/4, 0), about (1/8)^5/120 = 2.5e-7 of 2^31 (~530 LSB).
  constexpr double kTol = 600;
  for (int64_t z = -1; z >= kMin; z = z * 3 - 17) {
    const long double expected = std::exp(static_cast<long double>(z) / (1 << 26)) * 2147483648.0L;
    EXPECT_NEAR(exp_on_negative_values(static_cast<int32_t>(z)), expected, kTol) << "z = " << z;
  }
  // exp(-1) = poly(-1/4)·exp(-1/4)·exp(-1/2); exp(-1/4) is the polynomial alone (no remainder bits).
  EXPECT_NEAR(exp_on_negative_values(-(1 << 26)), 790015084, kTol);
  EXPECT_NEAR(exp_on_negative_values(-(1 << 24)), 1672461947, kTol);
}

TEST(CmsisFixedPoint, OneOverOnePlusX) {
  EXPECT_EQ(one_over_one_plus_x_for_x_in_0_1(0), kMax);  // 1/(1+0) saturates to "one"
  for (int64_t x = 1; x <= kMax; x = x * 2 + 12345) {
    const long double expected = 2147483648.0L / (1 + static_cast<long double>(x) / 2147483648.0L);
    EXPECT_NEAR(one_over_one_plus_x_for_x_in_0_1(static_cast<int32_t>(x)), expected, 8) << "x = " << x;
  }
}

TEST(CmsisFixedPoint, CountLeadingZeros) {
  EXPECT_EQ(count_leading_zeros(0), 32);
  EXPECT_EQ(count_leading_zeros(1), 31);
  EXPECT_EQ(count_leading_zeros(1u << 19), 12);
  EXPECT_EQ(count_leading_zeros((1u << 28) - 1), 4);
  EXPECT_EQ(count_leading_zeros(0x80000000u), 0);
}

}  // namespace
}  // namespace sdpa::cortex_m::cmsis
