#pragma once
/// A model of CMSIS-NN's arm_elementwise_mul_s8 as ExecuTorch's
/// cortex_m.quantized_mul calls it, semantics/cortex-m-and-xnnpack.md §2.4.
#include <cstdint>
#include <vector>

#include "backends/cortex_m/cmsis/requantize.h"

namespace sdpa::cortex_m::cmsis {

/// The offsets are the negated input zero points and the output zero point
/// (the runtime negates the zps it is given); the activation range ExecuTorch
/// always passes is [-128, 127].
struct ElementwiseMulParams {
  int32_t input_1_offset = 0;
  int32_t input_2_offset = 0;
  int32_t output_offset = 0;
  int32_t multiplier = 0;
  int32_t shift = 0;
  int32_t activation_min = -128;
  int32_t activation_max = 127;
  /// The requantization CMSIS-NN is built with (the default: double rounding).
  Rounding rounding = Rounding::double_rounding;
  Overflow overflow = Overflow::undefined;
};

/// out[i] = clamp(requantize((a[i] + input_1_offset)·(b[i] + input_2_offset),
/// multiplier, shift) + output_offset, activation range), element by element
/// over equal-sized inputs (std::invalid_argument otherwise).
/// Refused with CmsisUndefined (kernel "arm_elementwise_mul_s8"): an offset
/// whose sum with an int8 or whose product leaves int32 ("input_1_offset",
/// "input_2_offset", "product[i]"), a requantize refusal ("multiplier",
/// "shift", "product[i]·2^shift"), an output_offset addition that overflows
/// ("output_offset"), and an activation range not within [-128, 127].
std::vector<int8_t> arm_elementwise_mul_s8(const std::vector<int8_t>& a, const std::vector<int8_t>& b,
                                           const ElementwiseMulParams& params);

}  // namespace sdpa::cortex_m::cmsis
