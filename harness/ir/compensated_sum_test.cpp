#include "harness/ir/compensated_sum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace sdpa {
namespace {

double sum_of(const std::vector<double>& xs) {
  CompensatedSum s;
  for (double x : xs) s.add(x);
  return s.value();
}

TEST(CompensatedSum, KeepsWhatAPlainDoubleSumRoundsAway) {
  EXPECT_EQ(sum_of({1e16, 1.0, -1e16}), 1.0);
  EXPECT_EQ(sum_of({1.0, 1e100, 1.0, -1e100}), 2.0);
  double plain = 0;
  for (double x : {1e16, 1.0, -1e16}) plain += x;
  EXPECT_EQ(plain, 0.0);  // what the test would see without the error term
}

// Large terms (up to 2^30, on a grid of 2^-20) that cancel in pairs, and
// small ones on a grid of 2^-40: the exact sum is the small terms' sum,
// which a long double accumulator (64 bits against the 70 the partial sums
// need) loses most of.
TEST(CompensatedSum, CancellingSumsComeOutWithinAnUlpOfTheExactSum) {
  std::mt19937_64 g(3);
  std::uniform_int_distribution<int64_t> big(-(int64_t{1} << 50), int64_t{1} << 50), small(-1000, 1000);
  int long_double_wrong = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<double> xs;
    int64_t small_steps = 0;
    for (int i = 0; i < 100; ++i) {
      const int64_t m = big(g), s = small(g);
      small_steps += s;
      xs.push_back(std::ldexp(static_cast<double>(m), -20));
      xs.push_back(std::ldexp(static_cast<double>(-m), -20));
      xs.push_back(std::ldexp(static_cast<double>(s), -40));
    }
    std::shuffle(xs.begin(), xs.end(), g);
    const double exact = std::ldexp(static_cast<double>(small_steps), -40);
    const double got = sum_of(xs);
    const double ulp = exact == 0 ? std::numeric_limits<double>::denorm_min()
                                  : std::nextafter(std::fabs(exact), INFINITY) - std::fabs(exact);
    EXPECT_LE(std::fabs(got - exact), ulp) << "trial " << trial;
    long double acc = 0;
    for (double x : xs) acc += x;
    long_double_wrong += static_cast<double>(acc) != exact;
  }
  EXPECT_GT(long_double_wrong, 1000);  // the data is hard enough to tell the two apart
}

TEST(CompensatedSum, NonFiniteTotalsAreThePlainSums) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(sum_of({1.0, inf, 2.0}), inf);
  EXPECT_EQ(sum_of({-inf, 1.0}), -inf);
  EXPECT_TRUE(std::isnan(sum_of({inf, 1.0, -inf})));
  EXPECT_TRUE(std::isnan(sum_of({1.0, std::nan(""), 2.0})));
  const double big = std::numeric_limits<double>::max();
  EXPECT_EQ(sum_of({big, big}), inf);
}

TEST(CompensatedSum, AZeroSumKeepsTheSignItsStartGives) {
  CompensatedSum from_first(-0.0);
  from_first.add(-0.0);
  EXPECT_TRUE(std::signbit(from_first.value()));
  CompensatedSum from_zero;
  from_zero.add(-0.0);
  EXPECT_FALSE(std::signbit(from_zero.value()));
  EXPECT_EQ(sum_of({}), 0.0);
}

}  // namespace
}  // namespace sdpa
