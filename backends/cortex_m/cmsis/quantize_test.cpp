#include "backends/cortex_m/cmsis/quantize.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backends/cortex_m/cmsis/cmsis_test_util.h"

namespace sdpa::cortex_m::cmsis {
namespace {

using testing::refusal;

TEST(CmsisQuantize, RoundsHalfToEvenAndClamps) {
  // scale 0.5: x·2 = 2.5, 3.5, -2.5, -0.5 → 2, 4, -2, 0 (std::round would give 3 and -3 and -1).
  EXPECT_EQ(quantize_per_tensor({1.25f, 1.75f, -1.25f, -0.25f}, 0.5, 0), (std::vector<int8_t>{2, 4, -2, 0}));
  EXPECT_EQ(quantize_per_tensor({1000.f, -1000.f, 0.f}, 0.5, 10), (std::vector<int8_t>{127, -128, 10}));
  EXPECT_EQ(quantize_per_tensor({0.f, 1000.f}, 1.0, -128, -100, 50), (std::vector<int8_t>{-100, 50}));
}

TEST(CmsisQuantize, MultipliesByTheFloatReciprocal) {
  // S = 0.3: (1/0.3f)·(-35.25f) is exactly -117.5 in float (→ -118), while -35.25f/0.3f is -117.49999 (→ -117).
  EXPECT_EQ(quantize_per_tensor({-35.25f}, 0.3, 0), std::vector<int8_t>{-118});
  EXPECT_EQ(std::nearbyint(-35.25f / 0.3f), -117.0f);
}

TEST(CmsisQuantize, RefusesUndefinedConversions) {
  const CmsisFault nan = refusal([] { quantize_per_tensor({1.f, std::nanf("")}, 0.5, 0); });
  EXPECT_EQ(nan.kernel, "quantize_per_tensor");
  EXPECT_EQ(nan.operand, "input[1]");
  EXPECT_EQ(refusal([] { quantize_per_tensor({3e9f}, 1.0, 0); }).operand, "input[0]");
  EXPECT_EQ(refusal([] { quantize_per_tensor({1.f}, 0.0, 0); }).operand, "input[0]");  // 1/0 = inf; 0·inf is NaN
  EXPECT_EQ(refusal([] { quantize_per_tensor({0.f}, 0.0, 0); }).operand, "input[0]");
  EXPECT_EQ(refusal([] { quantize_per_tensor({1.f}, 1.0, std::numeric_limits<int32_t>::max()); }).operand,
            "zero_point");
  EXPECT_EQ(quantize_per_tensor({2e9f}, 1.0, -2147483647), std::vector<int8_t>{-128});  // in range: clamps
}

TEST(CmsisQuantize, QuantRangeIsCheckedAtRuntime) {
  const CmsisFault f = refusal<CmsisCheckFailed>([] { quantize_per_tensor({0.f}, 1.0, 0, -129, 127); });
  EXPECT_EQ(f.kernel, "quantize_per_tensor");
  EXPECT_EQ(f.operand, "quant_min");
  EXPECT_EQ(refusal<CmsisCheckFailed>([] { quantize_per_tensor({0.f}, 1.0, 0, -128, 128); }).operand, "quant_max");
}

TEST(CmsisDequantize, IsFloat32) {
  EXPECT_EQ(dequantize_per_tensor({5, -128, 127}, 0.25, 1), (std::vector<float>{1.0f, -32.25f, 31.5f}));
  // (q - zp)·float(S) = -253·0.1f = -25.3000011, not the double product rounded (-25.2999992).
  EXPECT_EQ(dequantize_per_tensor({-128}, 0.1, 125)[0], -25.3000011f);
  EXPECT_NE(dequantize_per_tensor({-128}, 0.1, 125)[0], static_cast<float>(-253 * 0.1));
  EXPECT_EQ(refusal([] { dequantize_per_tensor({1}, 1.0, std::numeric_limits<int32_t>::min()); }).operand,
            "zero_point");
}

// Quantize then dequantize is within half a step for every in-range value.
RC_GTEST_PROP(CmsisQuantize, RoundTripWithinHalfAStep, ()) {
  const double scale = *rc::gen::inRange(1, 1000) / 997.0;
  const int32_t zp = *rc::gen::inRange(-128, 128);
  const float x = static_cast<float>(((*rc::gen::inRange(0, 1 << 20)) / double(1 << 20) * 255 - 128 - zp) * scale);
  const float back = dequantize_per_tensor(quantize_per_tensor({x}, scale, zp), scale, zp)[0];
  RC_ASSERT(std::fabs(back - x) <= scale * (0.5 + 1e-5));
}

}  // namespace
}  // namespace sdpa::cortex_m::cmsis
