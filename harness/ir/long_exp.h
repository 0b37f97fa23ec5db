#pragma once
/// exp in long double at long double accuracy, several times cheaper than
/// glibc's expl (which saves and restores the x87 environment per call): the
/// Eigen oracle takes one per attention weight. Inline: a long double
/// argument passed to a call goes through memory, an 80-bit store and reload
/// that cost more than the polynomial.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace sdpa {

namespace long_exp_internal {

constexpr int kTableBits = 5;
constexpr int kTable = 1 << kTableBits;

/// 2^(j/32) for j in [0, 32), each within an ulp of long double (exp2l).
const long double* power_table();

/// 2^k as an x87 extended value: explicit integer bit, biased exponent k + 16383.
inline long double power_of_two(int64_t k) {
  unsigned char bytes[sizeof(long double)] = {};
  const uint64_t mantissa = uint64_t{1} << 63;
  const uint16_t exponent = static_cast<uint16_t>(k + 16383);
  std::memcpy(bytes, &mantissa, 8);
  std::memcpy(bytes + 8, &exponent, 2);
  long double r;
  std::memcpy(&r, bytes, sizeof r);
  return r;
}

}  // namespace long_exp_internal

/// e^x within a few units in the last place of long double (tested against
/// expl): a table of 2^(j/32) and a degree-7 polynomial on |r| <= ln2/64.
/// NaN gives NaN, -inf 0, +inf inf; below -11400 0, above 11400 inf; in
/// between, outside [-11300, 11300], it is expl.
inline long double exp_long(long double x) {
  using namespace long_exp_internal;
  static_assert(sizeof(long double) >= 10, "x87 extended long double expected");
  if (std::isnan(x)) return x;
  // A masked key's weight (-inf) or one far below the row max: below -11400,
  // e^x is under half the least long double (2^-16445 ~ e^-11398.8) and
  // rounds to +0; above 11400 it overflows. Answered here, not by libm's
  // expl, which sets errno and saves and restores the x87 environment there.
  if (x < -11400.0L) return 0.0L;
  if (x > 11400.0L) return std::numeric_limits<long double>::infinity();
  if (!(x > -11300.0L && x < 11300.0L)) return std::exp(x);  // near the range's ends
  // x = (32 k + j) ln2/32 + r with n = 32 k + j = round(x * 32/ln2), rounded
  // in double: any nearby integer serves (r stays within the polynomial's
  // range), and it needs no more than double's precision, which valgrind's
  // x87 emulation also gives. r comes from Cody and Waite's split of ln2/32.
  constexpr double kInvStep = 46.16624130844682903551758979206054839765;  // 32 / ln 2
  constexpr double kShift = 0x1.8p52;  // adding it rounds |t| < 2^51 to an integer
  const double shifted = static_cast<double>(x) * kInvStep + kShift;
  const int64_t n = static_cast<int64_t>(shifted - kShift);
  // ln2/32 = kStepHi + kStepLo; kStepHi has 40 significant bits, so n * kStepHi
  // (|n| < 2^19) is exact and x - n * kStepHi loses nothing.
  constexpr long double kStepHi = 0x1.62e42fefa4p-6L;
  constexpr long double kStepLo = -0x1.8432a1b0e2633fe0p-48L;
  const long double nn = static_cast<long double>(n);
  const long double r = (x - nn * kStepHi) - nn * kStepLo;
  // e^r on |r| <= ln2/64 ~ 0.0109: the degree-8 term is below 2^-69 relative.
  const long double p =
      1.0L + r * (1.0L + r * (0.5L + r * (1.0L / 6 + r * (1.0L / 24 + r * (1.0L / 120 + r * (1.0L / 720 + r * (1.0L / 5040)))))));
  const int64_t j = n & (kTable - 1), k = (n - j) / kTable;
  return power_table()[j] * p * power_of_two(k);
}

}  // namespace sdpa
