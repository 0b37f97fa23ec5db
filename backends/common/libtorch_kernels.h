#pragma once
/// Kernel set `libtorch`: each op computed by the real ATen op of the
/// Debian LibTorch build (1.13, CPU), in the tensor's own dtype.
#include "harness/ir/kernel_set.h"

namespace sdpa {

/// The dtypes LibTorch's CPU build computes every op here in (its bmm and
/// softmax lack f16 kernels, so f16 is not claimed).
std::vector<DType> libtorch_dtypes();

const KernelSet& libtorch_kernels();

}  // namespace sdpa
