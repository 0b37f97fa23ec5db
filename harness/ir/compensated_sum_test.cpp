#include "harness/ir/compensated_sum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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

TEST(CompensatedSum, TwoProductGivesTheProductsExactRoundingError) {
  std::mt19937_64 g(5);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-300, 300);
  for (int n = 0; n < 100000; ++n) {
    const double a = std::ldexp(mantissa(g), exponent(g)), b = std::ldexp(mantissa(g), exponent(g));
    double err = 0;
    const double p = two_product(a, b, err);
    ASSERT_EQ(p, a * b);
    // fma rounds a * b - p once, and that difference is a double: exact.
    ASSERT_EQ(err, std::fma(a, b, -p)) << a << " * " << b;
  }
  double err = 1;
  EXPECT_EQ(two_product(0x1p1000, 3.0, err), 0x1p1000 * 3.0);
  EXPECT_EQ(err, 0.0);  // past the split's range: no error term
  EXPECT_EQ(two_product(1e300, 1e300, err), std::numeric_limits<double>::infinity());
  EXPECT_EQ(err, 0.0);
}

// The row form gives each element two_product's product and error, bit for
// bit: across the exponent range, past the split's range (either operand),
// with subnormal, zero, infinite and NaN operands, and in place.
TEST(CompensatedSum, TwoProductsByGivesEachElementTwoProductsBits) {
  std::mt19937_64 g(17);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-1074, 1023);
  const double specials[] = {0.0, -0.0, 0x1p995, -0x1p996, 0x1p-1074, std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(), std::nan("")};
  auto bits = [](double x) {
    uint64_t u;
    std::memcpy(&u, &x, sizeof u);
    return std::isnan(x) ? uint64_t{1} : u;  // every NaN alike
  };
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t n = trial % 37;
    const double b = trial % 10 == 0 ? specials[trial / 10 % 8] : std::ldexp(mantissa(g), exponent(g) / 2);
    std::vector<double> a(n), p(n), err(n), in_place(n), in_place_err(n);
    for (double& x : a) x = g() % 6 == 0 ? specials[g() % 8] : std::ldexp(mantissa(g), exponent(g));
    two_products_by(a.data(), b, n, p.data(), err.data());
    in_place = a;
    two_products_by(in_place.data(), b, n, in_place.data(), in_place_err.data());
    for (int64_t j = 0; j < n; ++j) {
      double want_err = 1;
      const double want = two_product(a[j], b, want_err);
      ASSERT_EQ(bits(p[j]), bits(want)) << a[j] << " * " << b;
      ASSERT_EQ(bits(err[j]), bits(want_err)) << a[j] << " * " << b;
      ASSERT_EQ(bits(in_place[j]), bits(want));
      ASSERT_EQ(bits(in_place_err[j]), bits(want_err));
    }
  }
}

// A row of sums gives each output the bits a CompensatedSum gives it with
// the same terms in the same order; the double-double form's high part is
// the same total, and its low part what that total rounded away.
TEST(CompensatedSum, ARowGivesEachOutputTheBitsOfItsOwnSum) {
  std::mt19937_64 g(9);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = 1 + trial % 37, terms = 1 + trial % 11;
    std::vector<double> a(terms), y(terms * n);
    for (double& x : a) x = normal(g) * std::ldexp(1.0, trial % 40);
    for (double& x : y) x = normal(g);
    CompensatedRow from_zero, from_first;
    from_zero.reset(n);
    from_first.start(n, a[0], y.data());
    for (int64_t t = 0; t < terms; ++t) from_zero.add_scaled(a[t], y.data() + t * n);
    for (int64_t t = 1; t < terms; ++t) from_first.add_scaled(a[t], y.data() + t * n);
    std::vector<double> got0(n), got1(n), hi(n), lo(n);
    from_zero.values(got0.data());
    from_first.values(got1.data());
    from_first.values(hi.data(), lo.data());
    for (int64_t j = 0; j < n; ++j) {
      CompensatedSum s0, s1(a[0] * y[j]);
      for (int64_t t = 0; t < terms; ++t) s0.add(a[t] * y[t * n + j]);
      for (int64_t t = 1; t < terms; ++t) s1.add(a[t] * y[t * n + j]);
      ASSERT_EQ(got0[j], s0.value());
      ASSERT_EQ(got1[j], s1.value());
      ASSERT_EQ(hi[j], s1.value());
      // hi + lo is sum + err of the same sum, rounded only below lo's last bit.
      ASSERT_EQ(hi[j] + lo[j], hi[j]);
      EXPECT_LE(std::fabs(static_cast<long double>(hi[j]) + lo[j] -
                          (static_cast<long double>(s1.sum) + s1.err)),
                std::ldexp(std::fabs(hi[j]), -100));
    }
  }
}

// compensated_products (_from_first, and over rows by pointer) sum few
// outputs in registers, in lane groups of 4, 2 and 1, and more side by
// side: either way each output is its own CompensatedSum from 0 (from its
// first term), bit for bit, with zeros, infinities and NaN among the
// terms; the double-double's low part is the total's rounding.
TEST(CompensatedSum, ProductsGiveEachOutputTheBitsOfItsOwnSum) {
  std::mt19937_64 g(11);
  std::normal_distribution<double> normal;
  const double specials[] = {0.0, -0.0, std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(), std::nan("")};
  auto bits = [](double x) {
    uint64_t b;
    std::memcpy(&b, &x, sizeof b);
    return std::isnan(x) ? uint64_t{1} : b;  // every NaN alike
  };
  CompensatedRow row;
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t n = 1 + trial % 19, terms = trial % 13;
    std::vector<double> a(terms), y(terms * n), out(n);
    for (double& x : a) x = normal(g) * std::ldexp(1.0, trial % 40);
    for (double& x : y) x = trial % 3 == 0 && g() % 8 == 0 ? specials[g() % 5] : normal(g);
    compensated_products(a.data(), y.data(), terms, n, row, out.data());
    std::vector<double> hi(n), lo(n), by_rows(n);
    std::vector<const double*> rows(terms);
    for (int64_t t = 0; t < terms; ++t) rows[t] = y.data() + t * n;
    if (terms > 0) {
      compensated_products_from_first(a.data(), y.data(), terms, n, row, hi.data(), lo.data());
      compensated_row_products_from_first(a.data(), rows.data(), terms, n, row, by_rows.data());
    }
    for (int64_t j = 0; j < n; ++j) {
      CompensatedSum s;
      for (int64_t t = 0; t < terms; ++t) s.add(a[t] * y[t * n + j]);
      ASSERT_EQ(bits(out[j]), bits(s.value())) << "n " << n << " terms " << terms << " output " << j;
      if (terms == 0) continue;
      CompensatedSum first(a[0] * y[j]);
      for (int64_t t = 1; t < terms; ++t) first.add(a[t] * y[t * n + j]);
      double want_hi, want_lo;
      compensated_value(first.sum, first.err, want_hi, want_lo);
      ASSERT_EQ(bits(hi[j]), bits(first.value())) << "n " << n << " terms " << terms << " output " << j;
      ASSERT_EQ(bits(by_rows[j]), bits(first.value())) << "n " << n << " terms " << terms << " output " << j;
      ASSERT_EQ(bits(lo[j]), bits(want_lo)) << "n " << n << " terms " << terms << " output " << j;
    }
  }
}

}  // namespace
}  // namespace sdpa
