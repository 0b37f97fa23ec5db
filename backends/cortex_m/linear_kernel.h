#pragma once
/// aten.linear.default (x [..., K], w [N, K], b [N]) -> [..., N] for the fp32
/// linears of the mha entry form: exact (long double accumulation) for the
/// exact set, fp32 accumulation in index order for the portable kernel
/// ExecuTorch runs a float linear on (`accumulation` f16: each product and
/// partial sum rounded to f16, a self-test mutant).
#include "harness/ir/kernel_set.h"

namespace sdpa::cortex_m {

void add_linear_kernel(KernelSet& k, bool exact, DType accumulation = DType::f32);

}  // namespace sdpa::cortex_m
