#pragma once
/// Naive kernels for the aten ops the modeled graphs hold, in three numerics:
/// `exact` (no rounding, compensated sums in double: the meaning of a graph);
/// `emulated` (round each op's result to its dtype, accumulate in the type
/// a CPU kernel would: f32 for f16/bf16, as ATen's CPU kernels do; a fused
/// scaled_dot_product_attention upcasts like PyTorch's math backend);
/// `naive` (as emulated, but the fused attention rounds every step to the
/// case dtype: the baseline B of NUMERICS.md, FlashAttention's "pt" reference).
#include <string>

#include "harness/ir/kernel_set.h"

namespace sdpa {

enum class Numerics { exact, emulated, naive };

/// Every op below, in the given numerics:
/// aten.{mul,add,sub,div}.{Tensor,Scalar}, transpose.int, permute,
/// contiguous, clone, reshape, view, _unsafe_view, expand, unsqueeze,
/// squeeze.dims, matmul, bmm, _softmax, softmax.int, _safe_softmax,
/// repeat, repeat_interleave.self_int, slice.Tensor, select.int,
/// _local_scalar_dense, ones, zeros, full, zeros_like, tril,
/// logical_not, masked_fill.Scalar, where.self, where.Scalar,
/// native_dropout, _to_copy, scaled_dot_product_attention.
KernelSet make_reference_kernels(const std::string& name, Numerics numerics);

/// The exact kernel set every target's soundness check runs on.
const KernelSet& exact_kernels();

/// Naive kernels in the case dtype ("naive"): the baseline B of NUMERICS.md.
const KernelSet& naive_kernels();

}  // namespace sdpa
