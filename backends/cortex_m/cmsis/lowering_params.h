#pragma once
/// The CMSIS-NN parameters AtenToCortexMPass computes ahead of time
/// (backends/cortex_m/passes/aten_to_cortex_m_pass.py and passes_utils.py),
/// and the runtime's check of them, semantics/cortex-m-and-xnnpack.md §1.7.
#include <cstdint>
#include <string>

#include "backends/cortex_m/cmsis/batch_matmul_s8.h"
#include "backends/cortex_m/cmsis/elementwise_mul_s8.h"
#include "backends/cortex_m/cmsis/fully_connected_s8.h"
#include "backends/cortex_m/cmsis/softmax_s8.h"

namespace sdpa::cortex_m::cmsis {

/// A per-tensor int8 quantization: x ≈ (q - zero_point)·scale.
struct QParams {
  double scale = 1.0;
  int32_t zero_point = 0;
};

/// x ≈ multiplier·2^(shift - 31); shift > 0 is a left shift (CMSIS convention).
struct QuantMultiplier {
  int32_t multiplier = 0;
  int32_t shift = 0;
};

/// quantize_multiplier_aot(x): (0, 0) for x = 0; else (m, e) = frexp(x),
/// q = round(m·2^31) with ties to even (Python round), q = 2^31 becomes
/// (2^30, e + 1), q clamped to int32. No range check on the shift (the
/// runtime does it). CmsisCheckFailed (kernel "quantize_multiplier_aot",
/// operand "x") for a NaN or infinite x, where Python's int(round(...)) raises.
QuantMultiplier quantize_multiplier_aot(double x);

/// validate_single_quant_params (ops/cortex_m_ops_common.h): ET_CHECK_MSG that
/// the multiplier is in int32 and the shift in [-31, 31]; CmsisCheckFailed
/// (kernel "validate_single_quant_params", operand "multiplier" or "shift",
/// upstream's message: "<param_name> shift must be in range [-31, 31]
/// [Value: -33]"). The callers' names: quantized_mul's output "Single quant
/// Output", softmax "softmax input"; quantized_batch_matmul calls none.
void validate_single_quant_params(int64_t multiplier, int64_t shift, const std::string& param_name);

/// _compute_softmax_params(S_in) with 5 input integer bits: (mult, shift) =
/// quantize_multiplier_aot(min(S_in·2^26, 2^31 - 1)) and diff_min =
/// -floor(31·2^26 / 2^shift) (TFLite CalculateInputRadius(5, shift, 31)),
/// saturated to int64.
SoftmaxParams softmax_params(double input_scale);

/// The AOT assertion on a softmax's output qparams: |scale - 1/256| <= 1e-12
/// and zero_point == -128; CmsisCheckFailed (kernel "_compute_softmax_params",
/// operand "output scale" or "output zero_point") otherwise.
void check_softmax_output_qparams(const QParams& out);

/// quantized_batch_matmul's parameters: offsets (-zp_l, -zp_r, +zp_o) and
/// quantize_multiplier_aot(S_l·S_r/S_o); activation [-128, 127].
/// std::invalid_argument for a zero point outside int8 (here and below).
BatchMatmulParams batch_matmul_params(const QParams& lhs, const QParams& rhs, const QParams& out);

/// quantized_linear's parameters: offsets (-zp_in, +zp_o) and
/// quantize_multiplier_aot(S_in·S_w/S_o) for a weight of zero point 0.
FullyConnectedParams fully_connected_params(const QParams& in, double weight_scale, const QParams& out);

/// quantized_mul's parameters as arm_elementwise_mul_s8 receives them: offsets
/// (-zp_a, -zp_b, +zp_o) and quantize_multiplier_aot(S_a·S_b/S_o).
ElementwiseMulParams elementwise_mul_params(const QParams& a, const QParams& b, const QParams& out);

}  // namespace sdpa::cortex_m::cmsis
