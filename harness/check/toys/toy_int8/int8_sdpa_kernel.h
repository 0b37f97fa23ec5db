#pragma once
/// Int8 attention kernels of the toy_int8 target: dynamic per-tensor
/// symmetric quantization, an int8 SDPA with fixed-point requantization
/// (gemmlowp-style multipliers, as TFLite and CMSIS-NN requantize), and
/// dequantization.
#include "harness/ir/kernel_set.h"

namespace sdpa::toy_int8 {

inline constexpr const char* kQuantizeOp = "toy_int8.quantize_per_tensor.default";
inline constexpr const char* kSdpaInt8Op = "toy_int8.sdpa.default";
inline constexpr const char* kDequantizeOp = "toy_int8.dequantize_per_tensor.default";

/// A deliberately wrong kernel for the self-tests.
enum class KernelMutant {
  none,
  output_shift,  // the output requantization shifts one bit too few (output doubled)
  score_shift,   // the logit requantization shifts one bit too few (logits doubled)
};

/// A real multiplier as a Q31 fixed-point one: m0 in [2^30, 2^31) and a
/// right shift, so that x * multiplier = x * m0 / 2^shift.
struct FixedMultiplier {
  int64_t m0 = 0;
  int shift = 0;
  bool negative = false;
};
FixedMultiplier fixed_multiplier(double real);
/// round(x * multiplier), half away from zero, computed in integers.
int64_t requantize(int64_t x, const FixedMultiplier& m);

/// kQuantizeOp(x, qmax): int8 values round(x / s), s = max|x| / qmax, with
/// s in the output's runtime qparams. kSdpaInt8Op(q, k, v, is_causal,
/// scale, enable_gqa; score_step, prob_step, out_qmax): int32 q.k,
/// logits requantized to multiples of score_step, softmax in f32, P
/// quantized to multiples of prob_step, int32 P @ V requantized to the
/// output scale max|v| / out_qmax. kDequantizeOp(x): x * s in f32.
KernelSet int8_kernels(KernelMutant mutant);

/// What the quantized graph means with infinite precision (the soundness
/// check's kernels): quantization is a change of units (x / s, unrounded),
/// the SDPA is exact in long double on the dequantized values, and the
/// reference exact kernels for every other op.
KernelSet exact_int8_kernels();

}  // namespace sdpa::toy_int8
