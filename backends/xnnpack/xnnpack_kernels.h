#pragma once
/// The xnnpack target's kernel sets: `xnnpack` (the real XNNPACK library for
/// the ops it takes, the model of its SDPA operator for a converted SDPA,
/// portable kernels for the rest), and the exact and naive sets extended to
/// the edge ops of the pattern graphs.
#include "backends/xnnpack/edge_reference_kernels.h"
#include "harness/check/numerics.h"
#include "harness/ir/kernel_set.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::xnnpack {

/// bmm (f32, f16) through fully-connected operators, mul.Tensor (f32, f16),
/// _safe_softmax over the last dim (f32: XNNPACK's softmax, then the
/// fully-masked-row guard on portable kernels), _softmax over the last dim
/// (f32: XNNPACK's softmax), an fp32 aten SDPA on the
/// SDPA operator model as the deleted SDPAVisitor fed it (any other dtype:
/// unsupported, as SDPAConfig took FP32 only); every other op on the
/// reference kernels in emulated numerics (ExecuTorch's portable kernels).
/// An XNNPACK status other than success is a KernelError naming the
/// function and the status (unsupported hardware: `unsupported`).
KernelSet make_xnnpack_kernels();

/// Which ops the `xnnpack` set runs on XNNPACK for a value of dtype `t`.
bool runs_on_xnnpack(const std::string& op, DType t);

/// Nodes of `g` the `xnnpack` set runs on XNNPACK and on portable kernels
/// (placeholders and constants not counted).
struct PartitionCounts {
  int delegated = 0;
  int portable = 0;
};
PartitionCounts partition_counts(const Graph& g);

/// How the `xnnpack` set computes case `c` on graph `g` (numerics.h).
KernelNumerics xnnpack_numerics(const Case& c, const Graph& g);


}  // namespace sdpa::xnnpack
