#pragma once
/// Target `cortex-m`: ExecuTorch's Cortex-M backend facing an fp32 aten SDPA
/// from export: DecomposeSDPAPass, MatmulToBmmPass, the CortexMQuantizer's
/// per-tensor int8 annotation and AtenToCortexMPass's lowering to the
/// CMSIS-NN int8 kernels (semantics/passes.md §1, cortex-m-and-xnnpack.md §1-2).
#include <memory>

#include "harness/check/target.h"

namespace sdpa::cortex_m {

std::unique_ptr<TargetFactory> make_factory();

}  // namespace sdpa::cortex_m
