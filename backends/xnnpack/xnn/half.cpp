#include "backends/xnnpack/xnn/half.h"

#include <cmath>
#include <cstring>

namespace sdpa::xnnpack {

uint16_t half_bits_from_float(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u)  // NaN: keep the top payload bits, force quiet
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: infinity
  if (abs < 0x38800000u) {  // below 2^-14: a subnormal half (or zero), in units of 2^-24
    float a;
    std::memcpy(&a, &abs, sizeof a);
    const auto units = static_cast<uint32_t>(std::nearbyint(a * 16777216.0f));  // exact scaling, ties to even
    return static_cast<uint16_t>(sign | units);  // 0x400 is the smallest normal: the encoding carries over
  }
  abs += 0xfffu + ((abs >> 13) & 1u);  // round the 13 dropped bits to nearest even
  return static_cast<uint16_t>(sign | ((abs - 0x38000000u) >> 13));  // rebias 127 -> 15
}

float float_from_half_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    const float v = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -v : v;
  }
  const uint32_t bits = exponent == 31 ? sign | 0x7f800000u | (mantissa << 13)
                                       : sign | ((exponent + 112u) << 23) | (mantissa << 13);
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

float round_to_half(float x) { return float_from_half_bits(half_bits_from_float(x)); }

}  // namespace sdpa::xnnpack
