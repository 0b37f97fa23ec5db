#include "harness/dtype.h"

#include <gtest/gtest.h>

#include <cmath>

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
