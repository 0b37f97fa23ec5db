#include "harness/ir/long_exp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace sdpa {
namespace {

// Relative distance from expl, in units of long double's epsilon (2^-63).
long double ulps_from_expl(long double x) {
  const long double want = std::exp(x), got = exp_long(x);
  if (want == got) return 0;
  return std::fabs(got - want) / want / std::numeric_limits<long double>::epsilon();
}

TEST(LongExp, MatchesExplToAFewUlpsOverTheOraclesRange) {
  std::mt19937_64 g(11);
  std::uniform_real_distribution<double> wide(-800.0, 50.0), unit(-1.0, 1.0);
  long double worst = 0;
  for (int n = 0; n < 200000; ++n) {
    // Scores minus the row max: mostly in [-40, 0], some far below, some tiny.
    long double x = static_cast<long double>(wide(g)) + static_cast<long double>(unit(g)) * 1e-17L;
    if (n % 3 == 1) x = static_cast<long double>(unit(g)) * 40;
    if (n % 3 == 2) x = static_cast<long double>(unit(g)) * std::ldexp(1.0L, -static_cast<int>(n % 70));
    worst = std::fmax(worst, ulps_from_expl(x));
  }
  EXPECT_LT(worst, 4.0L);
  for (long double x : {0.0L, -0.0L, 1.0L, -1.0L, -744.5L, -745.2L, 709.0L, -11000.0L, 11000.0L})
    EXPECT_LT(ulps_from_expl(x), 4.0L) << static_cast<double>(x);
}

TEST(LongExp, SpecialValuesAsExpl) {
  EXPECT_EQ(exp_long(0.0L), 1.0L);
  EXPECT_EQ(exp_long(-std::numeric_limits<long double>::infinity()), 0.0L);
  EXPECT_EQ(exp_long(std::numeric_limits<long double>::infinity()), std::numeric_limits<long double>::infinity());
  EXPECT_TRUE(std::isnan(exp_long(std::numeric_limits<long double>::quiet_NaN())));
  EXPECT_EQ(exp_long(-20000.0L), 0.0L);
  EXPECT_EQ(exp_long(20000.0L), std::numeric_limits<long double>::infinity());
  // Either side of the cutoffs answered without expl, as expl answers them.
  for (long double x : {-11400.5L, -11400.0L, -1e30L, 11400.0L, 11400.5L, 1e30L})
    EXPECT_EQ(exp_long(x), std::exp(x)) << static_cast<double>(x);
  // A weight below double's range (the oracle zeroes it) is still positive here.
  EXPECT_GT(exp_long(-800.0L), 0.0L);
  EXPECT_LT(exp_long(-800.0L), static_cast<long double>(std::numeric_limits<double>::denorm_min()));
}

}  // namespace
}  // namespace sdpa
