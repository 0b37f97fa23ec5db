#pragma once
/// IEEE 754 binary16 ("half", XNNPACK's fp16 datatype) as uint16_t bits:
/// the conversions fp16_ieee_from_fp32_value / fp16_ieee_to_fp32_value of
/// the FP16 library XNNPACK uses, written out here (round to nearest even,
/// overflow to infinity, subnormals kept, NaN kept quiet).
#include <cstdint>

namespace sdpa::xnnpack {

/// The binary16 nearest to `x` (ties to even), as bits.
uint16_t half_bits_from_float(float x);

/// The value of binary16 bits, exactly, as a float.
float float_from_half_bits(uint16_t h);

/// `x` rounded to binary16 and back: float_from_half_bits(half_bits_from_float(x)).
float round_to_half(float x);

}  // namespace sdpa::xnnpack
