#include "backends/xnnpack/xnn/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace sdpa::xnnpack {
namespace {

uint32_t float_bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// The nearest binary16 by search over the positive encodings (monotone in
// their bits), ties to the even encoding, 65520 and up to infinity.
uint16_t reference_half_bits(float x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= 65520.0) return sign | 0x7c00;
  uint16_t lo = 0;  // largest encoding <= a
  for (int step = 1 << 14; step > 0; step >>= 1)
    if (lo + step <= 0x7bff && float_from_half_bits(static_cast<uint16_t>(lo + step)) <= a) lo += step;
  if (lo == 0x7bff) return sign | lo;
  const double below = float_from_half_bits(lo), above = float_from_half_bits(static_cast<uint16_t>(lo + 1));
  const double d_lo = a - below, d_hi = above - a;
  const uint16_t pick = d_lo < d_hi ? lo : d_hi < d_lo ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
  return sign | pick;
}

TEST(Half, EveryEncodingRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = float_from_half_bits(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(float_from_half_bits(half_bits_from_float(f)))) << std::hex << h;
      continue;
    }
    ASSERT_EQ(half_bits_from_float(f), h) << std::hex << h;
  }
}

TEST(Half, KnownValuesAndTies) {
  EXPECT_EQ(half_bits_from_float(1.0f), 0x3c00);
  EXPECT_EQ(half_bits_from_float(-2.0f), 0xc000);
  EXPECT_EQ(half_bits_from_float(65504.0f), 0x7bff);
  EXPECT_EQ(half_bits_from_float(65519.996f), 0x7bff);
  EXPECT_EQ(half_bits_from_float(65520.0f), 0x7c00);  // the tie goes to the even "65536": infinity
  EXPECT_EQ(round_to_half(1.0f + 0x1p-11f), 1.0f);    // tie between 1 and 1 + 2^-10: even
  EXPECT_EQ(round_to_half(1.0f + 3 * 0x1p-11f), 1.0f + 0x1p-9f);
  EXPECT_EQ(round_to_half(0x1p-25f), 0.0f);             // half the smallest subnormal: to even 0
  EXPECT_EQ(round_to_half(3 * 0x1p-25f), 0x1p-23f);     // 1.5 units: to 2 units
  EXPECT_EQ(round_to_half(0x1.ff8p-15f), 0x1.ff8p-15f);  // the largest subnormal
  EXPECT_EQ(round_to_half(0x1.ffcp-15f), 0x1p-14f);     // 1023.5 units: the tie carries into the normals
  EXPECT_EQ(half_bits_from_float(-0.0f), 0x8000);
  EXPECT_EQ(half_bits_from_float(INFINITY), 0x7c00);
  EXPECT_TRUE(std::isnan(round_to_half(NAN)));
}

TEST(Half, RandomFloatsRoundToNearestEven) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits(0, 0x7f7fffffu);  // finite non-negative floats
  for (int i = 0; i < 20000; ++i) {
    uint32_t b = bits(rng);
    b = (b & 0x807fffffu) | ((0x60u + (b >> 23) % 0x30u) << 23);  // exponents 2^-31 .. 2^16 around the half range
    float x;
    std::memcpy(&x, &b, sizeof x);
    if (i % 2) x = -x;
    ASSERT_EQ(half_bits_from_float(x), reference_half_bits(x)) << x << " bits " << std::hex << float_bits(x);
  }
}

}  // namespace
}  // namespace sdpa::xnnpack
