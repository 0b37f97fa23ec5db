#include "harness/ir/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace sdpa {
namespace {

TEST(DType, RoundsToNearestEvenInEachFormat) {
  EXPECT_EQ(round_to(DType::bf16, 1.0 + std::ldexp(1.0, -8)), 1.0);  // tie -> even
  EXPECT_EQ(round_to(DType::bf16, 1.0 + 3 * std::ldexp(1.0, -8)), 1.0 + std::ldexp(1.0, -6));
  EXPECT_EQ(round_to(DType::f16, 2049.0), 2048.0);
  EXPECT_EQ(round_to(DType::f16, 2051.0), 2052.0);
  EXPECT_EQ(round_to(DType::f32, 1.0 + std::ldexp(1.0, -30)), 1.0);
  EXPECT_EQ(round_to(DType::f64, 0.1), 0.1);
}

TEST(DType, OverflowsToInfinityAndKeepsSubnormals) {
  EXPECT_TRUE(std::isinf(round_to(DType::f16, 65520.0)));
  EXPECT_EQ(round_to(DType::f16, 65519.0), 65504.0);
  EXPECT_EQ(round_to(DType::f16, std::ldexp(1.0, -24)), std::ldexp(1.0, -24));  // smallest subnormal
  EXPECT_EQ(round_to(DType::f16, std::ldexp(1.0, -26)), 0.0);
  EXPECT_TRUE(std::isinf(round_to(DType::bf16, 3.4e38)));
}

TEST(DType, IntegersSaturateAndRound) {
  EXPECT_EQ(round_to(DType::i8, 200.0), 127.0);
  EXPECT_EQ(round_to(DType::i8, -2.5), -2.0);
  EXPECT_EQ(round_to(DType::b8, 0.3), 1.0);
}

TEST(DType, UlpAndLowest) {
  EXPECT_EQ(ulp(DType::f32, 1.0), std::ldexp(1.0, -23));
  EXPECT_EQ(ulp(DType::bf16, 1.5), std::ldexp(1.0, -7));
  EXPECT_EQ(ulp(DType::f16, 0.0), std::ldexp(1.0, -24));
  EXPECT_EQ(lowest(DType::f16), -65504.0);
  EXPECT_EQ(unit_roundoff(DType::f32), std::ldexp(1.0, -24));
  EXPECT_EQ(accumulation_type(DType::bf16), DType::f32);
}

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i8, DType::i32, DType::i64, DType::b8})
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_FALSE(parse_dtype("float"));
}

}  // namespace
}  // namespace sdpa

namespace sdpa {
namespace {

// Straightforward rounding: scale to an integer count of quanta, rint.
double slow_round(double x, int precision, int emin, double max_finite) {
  if (!std::isfinite(x) || x == 0) return x;
  int e = 0;
  std::frexp(x, &e);
  double q = std::ldexp(1.0, std::max(e - 1, emin) - (precision - 1));
  double r = std::nearbyint(x / q) * q;
  return std::fabs(r) > max_finite ? std::copysign(INFINITY, x) : r;
}

TEST(DType, FastRoundingMatchesTheDefinitionOnRandomValues) {
  uint64_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    double mant = static_cast<double>(state >> 11) * 0x1p-53;
    int exp = static_cast<int>((state >> 3) % 80) - 40;
    double x = std::ldexp(mant, exp) * ((state & 1) ? -1 : 1);
    ASSERT_EQ(round_to(DType::f16, x), slow_round(x, 11, -14, 65504.0)) << x;
    ASSERT_EQ(round_to(DType::bf16, x), slow_round(x, 8, -126, 3.38953138925153547590470800371487866880e38)) << x;
  }
}

// The same over every binade of double, subnormals included, bit for bit
// (the sign of a zero too: a conversion keeps it).
TEST(DType, FastRoundingMatchesTheDefinitionOverEveryExponent) {
  auto same = [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); };
  uint64_t state = 777;
  for (int e = -1074; e <= 1023; ++e)
    for (int i = 0; i < 40; ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const double mant = 1.0 + static_cast<double>(state >> 11) * 0x1p-53;  // [1, 2)
      const double x = std::ldexp(mant, e) * ((state & 1) ? -1 : 1);
      const double f16 = slow_round(x, 11, -14, 65504.0);
      const double bf16 = slow_round(x, 8, -126, 3.38953138925153547590470800371487866880e38);
      ASSERT_TRUE(same(round_to(DType::f16, x), f16)) << x << " f16 " << round_to(DType::f16, x) << " vs " << f16;
      ASSERT_TRUE(same(round_to(DType::bf16, x), bf16)) << x << " bf16 " << round_to(DType::bf16, x) << " vs " << bf16;
    }
}

// Where the quantum of a huge value's binade is past double's range, the
// value still overflows to inf (not inf - inf = NaN).
TEST(DType, HugeValuesOverflowToInfinity) {
  for (int e : {128, 500, 979, 982, 1000, 1023}) {
    EXPECT_EQ(round_to(DType::bf16, std::ldexp(1.0, e)), INFINITY) << e;
    EXPECT_EQ(round_to(DType::f16, -std::ldexp(1.5, e)), -INFINITY) << e;
  }
  EXPECT_EQ(round_to(DType::bf16, std::numeric_limits<double>::max()), INFINITY);
}

TEST(DType, NegativeValuesThatRoundToZeroKeepTheirSign) {
  EXPECT_TRUE(std::signbit(round_to(DType::f16, -1e-10)));
  EXPECT_TRUE(std::signbit(round_to(DType::bf16, -1e-300)));
  EXPECT_FALSE(std::signbit(round_to(DType::bf16, 1e-300)));
}

}  // namespace
}  // namespace sdpa

namespace sdpa {
namespace {

// A row rounded at once is each element rounded alone, bit for bit, in
// every type: every binade of double, ties, NaN, infinities and signed zeros.
TEST(DType, RoundingARowIsRoundingEachElement) {
  std::vector<double> row{0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0 + 0x1p-8, 1.0 + 0x1p-11, 2.5, -3.5, 127.5, 1e300};
  uint64_t state = 99;
  for (int e = -1074; e <= 1023; e += 7) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    row.push_back(std::ldexp(1.0 + static_cast<double>(state >> 11) * 0x1p-53, e) * ((state & 1) ? -1 : 1));
  }
  auto bits = [](double x) {
    uint64_t b;
    std::memcpy(&b, &x, sizeof b);
    return std::isnan(x) ? uint64_t{1} : b;  // every NaN alike
  };
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i8, DType::i32, DType::i64, DType::b8}) {
    std::vector<double> all = row;
    round_all_to(t, all.data(), static_cast<int64_t>(all.size()));
    for (size_t i = 0; i < row.size(); ++i)
      ASSERT_EQ(bits(all[i]), bits(round_to(t, row[i]))) << dtype_name(t) << " " << row[i];
  }
}

}  // namespace
}  // namespace sdpa
