#include "backends/cortex_m/cmsis/requantize.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backends/cortex_m/cmsis/cmsis_test_util.h"

namespace sdpa::cortex_m::cmsis {
namespace {

using testing::refusal;

// CMSIS_NN_USE_SINGLE_ROUNDING's formula, which ExecuTorch does not build: one
// round half up of v·M·2^(s-31). A model that used it is a mutant.
int64_t single_rounding(int64_t v, int64_t m, int s) {
  const int total = 31 - s;
  return (v * m + (int64_t{1} << (total - 1))) >> total;
}

TEST(CmsisRequantize, GoldenHalfOfOddValues) {
  // semantics §2.1 / §5 item 5: M = 2^30, s = 0 (×0.5).
  const std::vector<int32_t> in = {-5, -3, -1, 1, 3, 5}, want = {-2, -1, 0, 1, 2, 3};
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(requantize(in[i], 1 << 30, 0), want[i]) << in[i];
}

TEST(CmsisRequantize, GoldenQuarter) {
  // M = 2^30, s = -1 (×0.25): 2 → 1 and -2 → -1 (0.5 and -0.5, both away from zero).
  EXPECT_EQ(requantize(2, 1 << 30, -1), 1);
  EXPECT_EQ(requantize(-2, 1 << 30, -1), -1);
  EXPECT_EQ(single_rounding(-2, 1 << 30, -1), 0);  // the single-rounding mutant fails this golden
}

// §2.1: "the left shift v·2^s wraps in int32". C calls that signed overflow
// undefined (the default: refused, naming the operand); the compiled Arm code
// wraps: 2^30·4 = 2^32 ≡ 0, and 3·2^29·4 = 3·2^31 ≡ -2^31, which M = 2^30 halves.
TEST(CmsisRequantize, LeftShiftOverflowIsUndefinedOrWraps) {
  const CmsisFault f = refusal([] { requantize(1 << 30, 1 << 30, 2); });
  EXPECT_EQ(f.kernel, "arm_nn_requantize");
  EXPECT_EQ(f.operand, "v·2^shift");
  EXPECT_EQ(requantize(1 << 30, 1 << 30, 2, Overflow::wrap), 0);
  EXPECT_EQ(requantize(3 << 29, 1 << 30, 2, Overflow::wrap), -(1 << 30));
  EXPECT_EQ(requantize(-3, 1 << 30, 31, Overflow::wrap), -(1 << 30));  // odd v·INT32_MIN ≡ INT32_MIN, halved
  for (int32_t v : {-77, 0, 5, 1 << 20})  // no overflow: both agree
    EXPECT_EQ(requantize(v, 1 << 30, 2, Overflow::wrap), requantize(v, 1 << 30, 2)) << v;
}

TEST(CmsisRequantize, DoubleRoundingDiffersFromSingleRounding) {
  // 1 × 0.75·2^-1 = 0.375: MUL_NO_SAT rounds 0.75 up to 1, DIV_POW2 then rounds 0.5 away to 1;
  // one rounding gives 0. The double-rounded result is 0.625 from the real value.
  constexpr int32_t kThreeQuarters = 1610612736;  // 0.75·2^31
  EXPECT_EQ(requantize(1, kThreeQuarters, -1), 1);
  EXPECT_EQ(single_rounding(1, kThreeQuarters, -1), 0);
  // With s >= 0 there is only one rounding: the two agree.
  EXPECT_EQ(requantize(3, kThreeQuarters, 0), single_rounding(3, kThreeQuarters, 0));
}

TEST(CmsisRequantize, LeftShiftsBeforeMultiplying) {
  // s = 2: v·4 then ×M/2^31.
  EXPECT_EQ(requantize(3, 1 << 30, 2), 6);
  EXPECT_EQ(requantize(-3, 1 << 30, 2), -6);
  EXPECT_EQ(requantize(1 << 28, 1 << 30, 2), 1 << 29);
  EXPECT_EQ(requantize(0, 1 << 30, 31), 0);  // 0 · (1 << 31) is the one defined product at s = 31
}

TEST(CmsisRequantize, RefusesUndefinedOperands) {
  struct Case {
    int32_t v, m, s;
    const char* operand;
  };
  for (const Case& c : {Case{1, std::numeric_limits<int32_t>::min(), 0, "multiplier"}, Case{1, 1 << 30, 32, "shift"},
                        Case{1, 1 << 30, -32, "shift"}, Case{1 << 30, 1 << 30, 1, "v·2^shift"},
                        Case{-(1 << 28) - 1, 1 << 30, 3, "v·2^shift"}, Case{1, 1 << 30, 31, "v·2^shift"},
                        Case{-1, 1 << 30, 31, "v·2^shift"}}) {
    const CmsisFault f = refusal([&] { requantize(c.v, c.m, c.s); });
    EXPECT_EQ(f.kernel, "arm_nn_requantize");
    EXPECT_EQ(f.operand, c.operand) << c.v << " " << c.m << " " << c.s;
  }
  const CmsisFault in_kernel = refusal([] { requantize_in("arm_batch_matmul_s8", "acc[0,1,2]", 1 << 30, 1 << 30, 4); });
  EXPECT_EQ(in_kernel.kernel, "arm_batch_matmul_s8");
  EXPECT_EQ(in_kernel.operand, "acc[0,1,2]·2^shift");
}

// Double rounding costs at most 1 of the real value v·M·2^(s-31) (0.5 from each step, the first scaled down).
RC_GTEST_PROP(CmsisRequantize, WithinOneOfTheRealValue, ()) {
  const int32_t m = *rc::gen::inRange<int32_t>(1 << 30, std::numeric_limits<int32_t>::max());
  const int32_t s = *rc::gen::inRange(-31, 1);
  const int32_t v = *rc::gen::inRange(-(1 << 24), 1 << 24);
  const long double real = std::ldexp(static_cast<long double>(v) * m, s - 31);
  RC_ASSERT(std::fabs(requantize(v, m, s) - real) <= 1.0L);
}

// CMSIS_NN_USE_SINGLE_ROUNDING (the self-tests' mutant): one rounding, half
// toward +inf; it differs from the default double rounding at negative ties
// and where the first rounding lands on a tie.
TEST(CmsisRequantize, SingleRoundingRoundsOnceHalfUp) {
  EXPECT_EQ(requantize_in("k", "v", -2, 1 << 30, -1, Rounding::single_rounding), 0);  // -0.5 -> 0
  EXPECT_EQ(requantize(-2, 1 << 30, -1), -1);                                          // -0.5 -> -1
  EXPECT_EQ(requantize_in("k", "v", 2, 1 << 30, -1, Rounding::single_rounding), 1);    // 0.5 -> 1
  EXPECT_EQ(requantize_in("k", "v", 5, 1 << 30, 0, Rounding::single_rounding), 3);     // 2.5 -> 3
  EXPECT_EQ(requantize_in("k", "v", 7, 1 << 30, 1, Rounding::single_rounding), 7);     // x1 exact
  const CmsisFault f = refusal([] { requantize_in("k", "v", 1, 1 << 30, 31, Rounding::single_rounding); });
  EXPECT_EQ(f.operand, "shift");
}

}  // namespace
}  // namespace sdpa::cortex_m::cmsis
