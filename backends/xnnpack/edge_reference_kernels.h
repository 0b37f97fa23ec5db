#pragma once
/// The reference kernels extended to the edge ops of the xnnpack target's
/// graphs: the copy ops (expand_copy, view_copy, permute_copy), mul.Scalar
/// as the portable kernel reads its Scalar, and the ops of _safe_softmax's
/// decomposition (eq.Scalar, any.dim, full_like).
#include <string>

#include "harness/ir/kernel_set.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::xnnpack {

/// The reference kernels in `numerics`, with the edge ops added.
KernelSet make_edge_reference_kernels(const std::string& name, Numerics numerics);

}  // namespace sdpa::xnnpack
