#pragma once
/// Target `aten`: PyTorch's own SDPA, decomposed by its math reference and
/// run on LibTorch's ATen kernels and on naive portable kernels.
#include <memory>

#include "harness/check/target.h"

namespace sdpa::aten {

std::unique_ptr<TargetFactory> make_factory();

}  // namespace sdpa::aten
