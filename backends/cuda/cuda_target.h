#pragma once
/// Target `cuda`: ExecuTorch's CUDA backend facing export's fused SDPA
/// variants (flash, efficient, cuDNN), turned back into aten SDPA by
/// ReplaceFusedSdpaWithSdpaPass, with Triton kernel mode off.
#include <memory>

#include "harness/check/target.h"

namespace sdpa::cuda {

std::unique_ptr<TargetFactory> make_factory();

}  // namespace sdpa::cuda
