// Models cortex_m.quantize_per_tensor / dequantize_per_tensor (int8),
// semantics/cortex-m-and-xnnpack.md §1.7: float32 arithmetic with the fp32
// reciprocal of the scale, std::nearbyint (round half to even), clamp; and
// quantize's Helium blocks (op_quantize_per_tensor.cpp @5e547f52). The
// Helium dequantize computes the scalar result bit for bit while its
// products are normal floats; one that is subnormal (a scale below about
// 1e-38) Helium's flush-to-zero would make 0: not modeled, no observer
// gives such a scale.
#include "backends/cortex_m/cmsis/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "backends/cortex_m/cmsis/cmsis_error.h"

namespace sdpa::cortex_m::cmsis {

namespace {

// MVE's floating-point instructions run under the Standard FPSCR value
// (default NaN, flush-to-zero, round to nearest): a subnormal operand is
// taken as a zero of its sign.
float flushed(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; }

// One Helium lane: the "magic number" conversion. The float's bits less
// 0x4B400000 are round(x·inv_scale) while |x·inv_scale| < 2^22; the int32
// and int16 steps wrap as vsubq_s32 and vmovnbq_s32 do. The operands are
// flushed (a subnormal x, or the reciprocal of a scale above 8.5e37, is 0);
// the result cannot be subnormal (it is 0 or at least 2^-24 from 1.5·2^23).
int8_t helium_lane(float x, float inv_scale, int32_t zero_point, int32_t quant_min, int32_t quant_max) {
  constexpr float kMagic = 12582912.0f;  // 1.5·2^23
  float f = std::fma(flushed(x), flushed(inv_scale), kMagic);
  if (std::isnan(f)) f = std::numeric_limits<float>::quiet_NaN();  // the default NaN, 0x7FC00000
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint32_t q32 = bits - (0x4B400000u - static_cast<uint32_t>(zero_point));
  const int16_t q16 = static_cast<int16_t>(static_cast<uint16_t>(q32 & 0xFFFFu));
  const int32_t clamped = std::min<int32_t>(std::max<int32_t>(q16, static_cast<int16_t>(quant_min)),
                                            static_cast<int16_t>(quant_max));
  return static_cast<int8_t>(clamped);
}

}  // namespace

std::vector<int8_t> quantize_per_tensor(const std::vector<float>& x, double scale, int32_t zero_point,
                                        int32_t quant_min, int32_t quant_max, Isa isa, QuantizeRounding rounding) {
  const char* kernel = "quantize_per_tensor";
  if (quant_min < -128)
    throw CmsisCheckFailed({kernel, "quant_min", std::to_string(quant_min) + " is below int8's -128"});
  if (quant_max > 127)
    throw CmsisCheckFailed({kernel, "quant_max", std::to_string(quant_max) + " is above int8's 127"});
  if (quant_max < -128)
    throw CmsisUndefined(
        {kernel, "quant_max", std::to_string(quant_max) + " is below -128: the int8 store would wrap"});
  const float inv_scale = 1.0f / static_cast<float>(scale);
  std::vector<int8_t> out(x.size());
  const size_t vector_end = isa == Isa::helium ? x.size() / 16 * 16 : 0;
  for (size_t i = 0; i < vector_end; ++i) out[i] = helium_lane(x[i], inv_scale, zero_point, quant_min, quant_max);
  for (size_t i = vector_end; i < x.size(); ++i) {
    const float r = rounding == QuantizeRounding::toward_zero ? std::trunc(inv_scale * x[i])
                                                              : std::nearbyint(inv_scale * x[i]);
    // static_cast<int32_t> of a float is defined only for values in [-2^31, 2^31).
    if (!(r >= -2147483648.0f && r < 2147483648.0f))
      throw CmsisUndefined({kernel, "input[" + std::to_string(i) + "]",
                            "nearbyint(" + std::to_string(inv_scale) + " * " + std::to_string(x[i]) +
                                ") is NaN or outside int32: the float-to-int32 conversion is undefined"});
    const int64_t q = int64_t{zero_point} + static_cast<int32_t>(r);
    if (q < std::numeric_limits<int32_t>::min() || q > std::numeric_limits<int32_t>::max())
      throw CmsisUndefined(
          {kernel, "zero_point", "zero_point + nearbyint(...) overflows int32 at input[" + std::to_string(i) + "]"});
    // std::max then std::min, in that order, as the op does.
    out[i] = static_cast<int8_t>(std::min<int64_t>(std::max<int64_t>(q, quant_min), quant_max));
  }
  return out;
}

std::vector<float> dequantize_per_tensor(const std::vector<int8_t>& q, double scale, int32_t zero_point) {
  const float s = static_cast<float>(scale);
  std::vector<float> out(q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    const int64_t centered = int64_t{q[i]} - zero_point;
    if (centered < std::numeric_limits<int32_t>::min() || centered > std::numeric_limits<int32_t>::max())
      throw CmsisUndefined({"dequantize_per_tensor", "zero_point",
                            "q - zero_point overflows int32 at input[" + std::to_string(i) + "]"});
    out[i] = static_cast<float>(static_cast<int32_t>(centered)) * s;
  }
  return out;
}

}  // namespace sdpa::cortex_m::cmsis
