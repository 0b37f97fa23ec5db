#pragma once
/// Target `xnnpack`: ExecuTorch's XNNPACK backend facing the attention
/// pattern a tracer leaves (the partitioner's SDPA pattern graphs and
/// variants of them), through LiftConstantScalarOperandsPass and
/// ConvertToSDPAPass, on the real XNNPACK library and a model of its
/// removed SDPA operator (semantics/passes.md §4, cortex-m-and-xnnpack.md §3-4).
#include <memory>

#include "harness/check/target.h"

namespace sdpa::xnnpack {

std::unique_ptr<TargetFactory> make_factory();

}  // namespace sdpa::xnnpack
