#pragma once
/// A model of CMSIS-NN's arm_fully_connected_s8 as ExecuTorch's
/// cortex_m.quantized_linear calls it (semantics/cortex-m-and-xnnpack.md
/// §1.7): input [rows, K] int8, weight [N, K] int8 with zero point 0, an
/// int32 bias [N] (or none), out [rows, N].
#include <cstdint>
#include <vector>

#include "backends/cortex_m/cmsis/requantize.h"

namespace sdpa::cortex_m::cmsis {

struct FullyConnectedDims {
  int64_t rows = 1;
  int64_t n = 1;  // output features
  int64_t k = 1;  // input features
};

/// input_offset = -zp_in, output_offset = +zp_o; the multiplier and shift of
/// quantize_multiplier_aot(S_in·S_w/S_o); the activation range ExecuTorch
/// fixes to [-128, 127].
struct FullyConnectedParams {
  int32_t input_offset = 0;
  int32_t output_offset = 0;
  int32_t multiplier = 0;
  int32_t shift = 0;
  int32_t activation_min = -128;
  int32_t activation_max = 127;
  Rounding rounding = Rounding::double_rounding;
  Overflow overflow = Overflow::undefined;
};

/// out[r,n] = clamp(requantize(Σ_k (input[r,k] + input_offset)·weight[n,k] +
/// bias[n], multiplier, shift) + output_offset, activation range).
/// Refused with CmsisUndefined (kernel "arm_fully_connected_s8") before any
/// output is computed when an int32 intermediate could overflow in either
/// upstream path ("acc[r,n]": some order of the terms leaves int32;
/// "kernel_sum[n]": the MVE path's precomputed input_offset·Σ_k w + bias),
/// when requantize refuses, when adding output_offset overflows
/// ("output_offset"), for an input_offset whose sum with an int8 leaves int32,
/// or an activation range not within [-128, 127].
/// std::invalid_argument for sizes that do not match dims.
std::vector<int8_t> arm_fully_connected_s8(const std::vector<int8_t>& input, const std::vector<int8_t>& weight,
                                           const std::vector<int32_t>& bias, const FullyConnectedDims& dims,
                                           const FullyConnectedParams& params);

}  // namespace sdpa::cortex_m::cmsis
