#include "backends/cortex_m/cmsis/quantize.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>
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

// Helium (op_quantize_per_tensor.cpp @5e547f52): whole blocks of 16 round
// x·inv_scale once (a fused multiply-add), the scalar tail rounds the float
// product again. inv_scale = 42.5 exactly, x = 0x3ffe7e7f: the product is
// 84.5000026, 84.5 in float.
std::vector<float> block_with(float x, size_t n = 16) {
  std::vector<float> v(n, 0.f);
  v[0] = x;
  v[n - 1] = x;
  return v;
}

TEST(CmsisQuantize, HeliumBlocksRoundTheExactProductOnceAndTheTailTwice) {
  float x;
  const uint32_t bits = 0x3ffe7e7fu;
  std::memcpy(&x, &bits, sizeof x);
  const double scale = 0.0235294122f;
  ASSERT_EQ(1.0f / static_cast<float>(scale), 42.5f);
  EXPECT_EQ(quantize_per_tensor({x}, scale, 0)[0], 84);
  const std::vector<int8_t> h = quantize_per_tensor(block_with(x, 17), scale, 0, -128, 127, Isa::helium);
  EXPECT_EQ(h[0], 85);   // in the block of 16
  EXPECT_EQ(h[16], 84);  // the tail: the scalar path
  EXPECT_EQ(quantize_per_tensor(block_with(x, 15), scale, 0, -128, 127, Isa::helium)[0], 84);  // no whole block
}

// A code past int16 wraps before the clamp; a non-finite x gives the zero point.
TEST(CmsisQuantize, HeliumKeepsTheLowSixteenBitsBeforeClamping) {
  const std::vector<std::pair<float, int>> cases = {{32768.f, -128}, {40000.f, -128}, {65536.f, 0}, {65541.f, 5},
                                                    {-32769.f, 127}, {100.f, 100},     {-1000.f, -128}};
  for (const auto& [x, want] : cases) {
    EXPECT_EQ(quantize_per_tensor(block_with(x), 1.0, 0, -128, 127, Isa::helium)[0], want) << x;
    EXPECT_EQ(quantize_per_tensor({x}, 1.0, 0)[0], x > 0 ? std::min(127, static_cast<int>(x)) : -128) << x;
  }
  float payload_nan;  // a negative NaN with a payload: Helium returns the default NaN whatever the input's bits
  const uint32_t nan_bits = 0xFFC00001u;
  std::memcpy(&payload_nan, &nan_bits, sizeof payload_nan);
  for (float x : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), std::nanf(""),
                  payload_nan})
    EXPECT_EQ(quantize_per_tensor(block_with(x), 0.5, -7, -128, 127, Isa::helium)[0], -7) << x;
}

// MVE takes a subnormal operand as zero (the Standard FPSCR value's
// flush-to-zero): a subnormal x in a block gives the zero point where the
// scalar path rounds x·(1/scale); so does any x when 1/scale is subnormal.
TEST(CmsisQuantize, HeliumFlushesSubnormalOperandsToZero) {
  const float tiny = 1.1e-38f;  // subnormal: below 2^-126
  ASSERT_EQ(std::fpclassify(tiny), FP_SUBNORMAL);
  const double small_scale = 2e-38;  // 1/scale = 5e37: tiny·(1/scale) = 0.55
  EXPECT_EQ(quantize_per_tensor({tiny, -tiny}, small_scale, 3), (std::vector<int8_t>{4, 2}));
  std::vector<float> block = block_with(tiny);
  block[1] = -tiny;
  const std::vector<int8_t> h = quantize_per_tensor(block, small_scale, 3, -128, 127, Isa::helium);
  EXPECT_EQ(h[0], 3);
  EXPECT_EQ(h[1], 3);
  const double large_scale = 1e38;  // 1/scale = 1e-38: subnormal
  ASSERT_EQ(std::fpclassify(1.0f / static_cast<float>(large_scale)), FP_SUBNORMAL);
  EXPECT_EQ(quantize_per_tensor({3e38f}, large_scale, 0)[0], 3);
  EXPECT_EQ(quantize_per_tensor(block_with(3e38f), large_scale, 0, -128, 127, Isa::helium)[0], 0);
  EXPECT_EQ(quantize_per_tensor(block_with(1.5f), 0.5, 0, -128, 127, Isa::helium)[0], 3);  // normal operands as before
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
