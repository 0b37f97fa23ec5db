// Models CMSIS-NN's fixed-point helpers (arm_nnsupportfunctions.h, default C
// paths), written from semantics/cortex-m-and-xnnpack.md §2.1-§2.2 and the
// gemmlowp fixed-point definitions they port. Intermediates are computed in
// int64 so that the model itself never overflows; what C would overflow is
// refused before it is computed.
#include "backends/cortex_m/cmsis/fixed_point.h"

#include <limits>

#include "backends/cortex_m/cmsis/cmsis_error.h"

namespace sdpa::cortex_m::cmsis {
namespace {

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// floor(p / 2^31) for any int64 p (an arithmetic shift).
int64_t floor_div_2_31(int64_t p) {
  return p >= 0 ? p / (int64_t{1} << 31) : -((-p + (int64_t{1} << 31) - 1) / (int64_t{1} << 31));
}

}  // namespace

int32_t doubling_high_mult(int32_t a, int32_t b) {
  if (a == kInt32Min && b == kInt32Min) return static_cast<int32_t>(kInt32Max);
  // The nudge (+2^30, or 1 - 2^30 for a negative product) then truncation equals
  // floor((a·b + 2^30) / 2^31); every other product lands inside int32.
  return static_cast<int32_t>(floor_div_2_31(int64_t{a} * b + (int64_t{1} << 30)));
}

int32_t doubling_high_mult_no_sat(int32_t a, int32_t b) {
  const int64_t r = floor_div_2_31(int64_t{a} * b + (int64_t{1} << 30));
  if (r > kInt32Max)
    throw CmsisUndefined({"arm_nn_doubling_high_mult_no_sat", "a·b",
                          "INT32_MIN·INT32_MIN: the result 2^31 does not fit the int32 return value"});
  return static_cast<int32_t>(r);
}

int32_t divide_by_power_of_two(int32_t x, int32_t exponent) {
  if (exponent < 0 || exponent > 31)
    throw CmsisUndefined({"arm_nn_divide_by_power_of_two", "exponent",
                          std::to_string(exponent) + " is outside [0, 31]: a C shift by that amount is undefined"});
  const int64_t mask = (int64_t{1} << exponent) - 1;
  const int64_t rem = int64_t{x} & mask;
  int64_t r = int64_t{x} >> exponent;  // arithmetic: floor
  const int64_t threshold = (mask >> 1) + (r < 0 ? 1 : 0);
  if (rem > threshold) ++r;
  return static_cast<int32_t>(r);
}

int32_t mult_by_power_of_two(int32_t x, int32_t exponent) {
  if (exponent < 0 || exponent > 30)
    throw CmsisUndefined({"arm_nn_mult_by_power_of_two", "exponent", std::to_string(exponent) + " is outside [0, 30]"});
  const int64_t r = int64_t{x} * (int64_t{1} << exponent);
  return static_cast<int32_t>(r > kInt32Max ? kInt32Max : r < kInt32Min ? kInt32Min : r);
}

int32_t shift_left_as_c(int32_t v, int32_t shift, const char* kernel, const OperandName& operand) {
  if (shift < 0 || shift > 31)
    throw CmsisUndefined(
        {kernel, "shift", "1 << " + std::to_string(shift) + " shifts an int32 by a negative amount or by 32 or more"});
  const int64_t r = int64_t{v} * (int64_t{1} << shift);
  if (r < kInt32Min || r > kInt32Max || (shift == 31 && v != 0))
    throw CmsisUndefined(
        {kernel, operand.str(),
         std::to_string(v) + " * (1 << " + std::to_string(shift) + ") overflows int32 (signed overflow)"});
  return static_cast<int32_t>(r);
}

int32_t exp_on_negative_values(int32_t z) {
  constexpr int64_t kQuarter = int64_t{1} << 24;  // 1/4 in Q5.26
  // a = (z mod 1/4) - 1/4 in [-1/4, 0); the part of z it drops is a multiple of 1/4.
  const int64_t a = (int64_t{z} & (kQuarter - 1)) - kQuarter;
  const int64_t remainder = a - int64_t{z};
  // x = a + 1/8 in Q0.31 (a << 5 rescales Q5.26 to Q0.31): the Taylor point is -1/8.
  const int32_t x = static_cast<int32_t>(a * 32 + (int64_t{1} << 28));
  constexpr int32_t kExpMinusOneEighth = 1895147668;  // exp(-1/8) in Q0.31
  constexpr int32_t kOneThird = 715827883;            // 1/3 in Q0.31
  const int32_t x2 = doubling_high_mult(x, x);
  const int32_t x3 = doubling_high_mult(x2, x);
  const int32_t x4 = doubling_high_mult(x2, x2);
  // x^2/2 + x^3/6 + x^4/24 = ((x^4/4 + x^3) / 3 + x^2) / 2
  const int32_t poly =
      divide_by_power_of_two(doubling_high_mult(divide_by_power_of_two(x4, 2) + x3, kOneThird) + x2, 1);
  int32_t result = kExpMinusOneEighth + doubling_high_mult(kExpMinusOneEighth, x + poly);
  // exp(-2^k) for the remainder bits 24..30 (k = -2..4), in Q0.31.
  constexpr int32_t kBarrel[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
  for (int i = 0; i < 7; ++i)
    if (remainder & (int64_t{1} << (24 + i))) result = doubling_high_mult(result, kBarrel[i]);
  return z == 0 ? static_cast<int32_t>(kInt32Max) : result;
}

int32_t one_over_one_plus_x_for_x_in_0_1(int32_t x) {
  // (1 + x) / 2 in Q0.31: the rounding half sum of x and "one" (INT32_MAX).
  const int64_t sum = int64_t{x} + kInt32Max;
  const int32_t half_denominator = static_cast<int32_t>((sum + (sum >= 0 ? 1 : -1)) / 2);
  // Newton-Raphson for 1/half_denominator in Q2.29, from 48/17 - 32/17·d.
  constexpr int32_t k48Over17 = 1515870810, kMinus32Over17 = -1010580540, kOne = 1 << 29;
  int32_t y = k48Over17 + doubling_high_mult(half_denominator, kMinus32Over17);
  for (int i = 0; i < 3; ++i)
    y += mult_by_power_of_two(doubling_high_mult(y, kOne - doubling_high_mult(half_denominator, y)), 2);
  // y/2 in Q0.31 is y's raw value doubled, saturating (x = 0 gives one).
  return mult_by_power_of_two(y, 1);
}

int32_t count_leading_zeros(uint32_t x) {
  int32_t n = 0;
  for (uint32_t bit = uint32_t{1} << 31; bit != 0 && (x & bit) == 0; bit >>= 1) ++n;
  return n;
}

}  // namespace sdpa::cortex_m::cmsis
