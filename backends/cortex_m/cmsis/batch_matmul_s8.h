#pragma once
/// A model of CMSIS-NN's arm_batch_matmul_s8 (Source/FullyConnectedFunctions/
/// arm_batch_matmul_s8.c) as ExecuTorch's cortex_m.quantized_batch_matmul
/// calls it, semantics/cortex-m-and-xnnpack.md §2.3: lhs {1, B, M, K}, rhs
/// already transposed {1, B, N, K}, out {1, B, M, N}, no broadcasting.
#include <cstdint>
#include <vector>

#include "backends/cortex_m/cmsis/requantize.h"

namespace sdpa::cortex_m::cmsis {

/// lhs [batch, m, k] times rhs_t [batch, n, k] (rhs transposed) gives [batch, m, n].
struct BatchMatmulDims {
  int64_t batch = 1;
  int64_t m = 1;
  int64_t n = 1;
  int64_t k = 1;
};

/// cmsis_nn_bmm_params (adj_x = adj_y = false, unused) and its fc_params:
/// input_offset = -zp_l, filter_offset = -zp_r, output_offset = +zp_o (the
/// code adds it, whatever the header comment says); the requantization
/// multiplier and shift; the activation range ExecuTorch fixes to [-128, 127].
struct BatchMatmulParams {
  int32_t input_offset = 0;
  int32_t filter_offset = 0;
  int32_t output_offset = 0;
  int32_t multiplier = 0;
  int32_t shift = 0;
  int32_t activation_min = -128;
  int32_t activation_max = 127;
  /// The requantization CMSIS-NN is built with (the default: double rounding).
  Rounding rounding = Rounding::double_rounding;
  Overflow overflow = Overflow::undefined;
};

/// out[b,m,n] = clamp(requantize(Σ_k (lhs[b,m,k] + input_offset)·(rhs_t[b,n,k] +
/// filter_offset), multiplier, shift) + output_offset, activation range).
/// Refused with CmsisUndefined (kernel "arm_batch_matmul_s8"), before any
/// output is computed, when an int32 accumulation could overflow in either
/// upstream path ("acc[b,m,n]": the terms' positive or negative part leaves
/// int32, so some order overflows; "vector_sum[b,n]" / "lhs_sum[b,m]": the MVE
/// path's input_offset·Σ_k(rhs + filter_offset) and filter_offset·Σ_k lhs),
/// when requantize refuses (operands "multiplier", "shift", "acc[b,m,n]·2^shift"),
/// when adding output_offset overflows ("output_offset"), and for offsets
/// whose sum with an int8 leaves int32 or an activation range that is not
/// within [-128, 127].
/// std::invalid_argument for sizes that do not match dims.
std::vector<int8_t> arm_batch_matmul_s8(const std::vector<int8_t>& lhs, const std::vector<int8_t>& rhs_t,
                                        const BatchMatmulDims& dims, const BatchMatmulParams& params);

}  // namespace sdpa::cortex_m::cmsis
