// Each primitive in 64-bit arithmetic from its definition on the page, not
// from the kernel model's helpers.
#include "backends/cortex_m/softmax_s8_reference.h"

#include <algorithm>
#include <limits>

namespace sdpa::cortex_m {
namespace {

constexpr int64_t kQ31Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kQ31Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kAccumBits = 12;

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// MUL_SAT: floor((a·b + 2^30) / 2^31), round half toward +inf; INT32_MIN² saturates.
int64_t mul_sat(int64_t a, int64_t b) {
  if (a == kQ31Min && b == kQ31Min) return kQ31Max;
  return floor_div(a * b + (int64_t{1} << 30), int64_t{1} << 31);
}

// DIV_POW2: x / 2^e rounded half away from zero.
int64_t div_pow2(int64_t x, int64_t e) {
  if (e == 0) return x;
  const int64_t q = floor_div(x, int64_t{1} << e), rem = x - q * (int64_t{1} << e);
  const int64_t half = int64_t{1} << (e - 1);
  return rem > half || (rem == half && x > 0) ? q + 1 : q;
}

// MUL_POW2: x·2^e saturated to int32.
int64_t mul_pow2(int64_t x, int64_t e) { return std::clamp(x * (int64_t{1} << e), kQ31Min, kQ31Max); }

// Wraps a 64-bit value to int32, as a C int32 addition or shift does.
int64_t wrap32(int64_t x) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(x))); }

// exp(a) for a Q5.26 a <= 0, in Q0.31: exp on [-1/4, 0) by a polynomial
// around -1/8, times exp(-2^k / 4) for each whole quarter bit k of -a.
int64_t exp_on_negative_values(int64_t a) {
  if (a == 0) return kQ31Max;
  const int64_t quarter = int64_t{1} << 24;
  const int64_t a_mod = (a & (quarter - 1)) - quarter;  // in [-1/4, 0)
  const int64_t remainder = a_mod - a;
  const int64_t x = wrap32(a_mod * 32) + (int64_t{1} << 28);  // Q0.31, plus 1/8
  const int64_t x2 = mul_sat(x, x);
  const int64_t poly =
      div_pow2(mul_sat(div_pow2(mul_sat(x2, x2), 2) + mul_sat(x2, x), 715827883) + x2, 1);  // x²/2 + x³/6 + x⁴/24
  int64_t result = 1895147668 + mul_sat(1895147668, x + poly);                           // exp(-1/8)·exp(x)
  const int64_t barrel[] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
  for (int k = 0; k < 7; ++k)
    if (remainder & (int64_t{1} << (24 + k))) result = mul_sat(result, barrel[k]);
  return result;
}

// 1 / (1 + x) for a Q0.31 x in [0, 1), in Q1.30 doubled: three Newton steps on
// the half denominator from 48/17 - 32/17·d.
int64_t one_over_one_plus_x(int64_t x) {
  const int64_t sum = x + kQ31Max;
  const int64_t half_denominator = (sum + (sum >= 0 ? 1 : -1)) / 2;
  int64_t y = 1515870810 + mul_sat(half_denominator, -1010580540);
  for (int i = 0; i < 3; ++i)
    y += mul_pow2(mul_sat(y, (int64_t{1} << 29) - mul_sat(half_denominator, y)), 2);
  return mul_pow2(y, 1);
}

int64_t count_leading_zeros32(int64_t v) {
  int64_t n = 0;
  for (int64_t bit = int64_t{1} << 31; bit > 0 && !(v & bit); bit >>= 1) ++n;
  return n;
}

}  // namespace

std::vector<int64_t> softmax_s8_reference(const std::vector<int64_t>& row, int64_t mult, int64_t shift,
                                          int64_t diff_min) {
  std::vector<int64_t> out(row.size(), -128);
  if (row.empty()) return out;
  const int64_t max = *std::max_element(row.begin(), row.end());
  std::vector<int64_t> e(row.size(), -1);  // -1: dropped below diff_min
  int64_t sum = 0;
  for (size_t i = 0; i < row.size(); ++i) {
    const int64_t d = row[i] - max;
    if (d < diff_min) continue;
    e[i] = exp_on_negative_values(mul_sat(wrap32(d * (int64_t{1} << shift)), mult));
    sum += div_pow2(e[i], kAccumBits);
  }
  if (sum <= 0 || sum > kQ31Max) return out;  // nothing kept, or a sum the kernel refuses
  const int64_t headroom = count_leading_zeros32(sum);
  const int64_t bits_over_unit = kAccumBits - headroom + 23;
  if (bits_over_unit > 31) return out;
  const int64_t scale = one_over_one_plus_x((sum << headroom) - (int64_t{1} << 31));
  for (size_t i = 0; i < row.size(); ++i)
    if (e[i] >= 0) out[i] = std::clamp<int64_t>(div_pow2(mul_sat(scale, e[i]), bits_over_unit) - 128, -128, 127);
  return out;
}

}  // namespace sdpa::cortex_m
