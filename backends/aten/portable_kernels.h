#pragma once
/// Kernel set `portable`: naive kernels in the case dtype, f16 and bf16
/// emulated exactly (round after each op, accumulate in f32).
#include "backends/aten/math_decomposition.h"
#include "harness/ir/kernel_set.h"

namespace sdpa::aten {

/// With Mutant::softmax_no_max, _safe_softmax skips the max subtraction
/// (a deliberately wrong kernel: exp overflows in f32 for large logits);
/// with Mutant::matmul_bf16_output, matmul rounds its result to bf16.
KernelSet portable_kernels(Mutant mutant);

}  // namespace sdpa::aten
