#pragma once
/// The cortex_m ops AtenToCortexMPass lowers to (semantics/cortex-m-and-xnnpack.md
/// §1.7), as the lowered graph holds them. Positional arguments follow the
/// upstream op schemas; the keyword arguments hold the annotated qparams
/// (upstream node meta input_qparams / output_qparams) that the exact model
/// and the invariants read.
//
//   quantize_per_tensor(x, scale, zero_point, quant_min, quant_max, dtype)
//   dequantize_per_tensor(x, scale, zero_point, quant_min, quant_max, dtype)
//   transpose(x, perm)
//   quantized_batch_matmul(lhs, lhs_offset, rhs_t, rhs_offset, output_zero_point,
//                          multiplier, shift; lhs_scale, rhs_scale, output_scale)
//   quantized_mul(a, a_zero_point, b, b_zero_point, output_zero_point, multiplier,
//                 shift; a_scale, b_scale, output_scale)
//   softmax(x, dim, input_zero_point, output_zero_point, input_multiplier,
//           input_shift, diff_min; input_scale)
//   quantized_linear(x, weight, bias, input_offset, output_offset, multiplier,
//                    shift; input_scale, weight_scale, output_scale, real_weight,
//                    real_bias)   weight int8 [N, K] (zero point 0), bias int32 [N]
//                    (scale S_in·S_w); real_weight / real_bias: the float
//                    parameters the codes round, which only the exact set reads
namespace sdpa::cortex_m {

inline constexpr const char* kQuantizeOp = "cortex_m.quantize_per_tensor.default";
inline constexpr const char* kDequantizeOp = "cortex_m.dequantize_per_tensor.default";
inline constexpr const char* kTransposeOp = "cortex_m.transpose.default";
inline constexpr const char* kBmmOp = "cortex_m.quantized_batch_matmul.default";
inline constexpr const char* kMulOp = "cortex_m.quantized_mul.default";
inline constexpr const char* kSoftmaxOp = "cortex_m.softmax.default";
inline constexpr const char* kQuantizedLinearOp = "cortex_m.quantized_linear.default";
/// An aten op the lowering keeps: a float linear, or (annotated and folded by
/// FoldAndAnnotateQParamsPass) one reading int8 with its qparams as kwargs.
inline constexpr const char* kLinearOp = "aten.linear.default";

/// The fixed qparams of a quantized softmax's output (SOFTMAX_OUTPUT_FIXED_QSPEC).
inline constexpr double kSoftmaxOutScale = 1.0 / 256;
inline constexpr int64_t kSoftmaxOutZeroPoint = -128;

/// The names under which the entry graph carries the call's example inputs
/// (Graph::constants): the calibration data the quantizer's observers see.
inline constexpr const char* kExamplePrefix = "example_inputs.";

}  // namespace sdpa::cortex_m
