#pragma once
/// A model of ExecuTorch's `triton::sdpa` (backends/cuda/triton/kernels/
/// sdpa.py at executorch main cff6f4dd32), semantics/llm-and-cuda.md §4.3;
/// the Triton programs' arithmetic as a stored copy of sdpa.py (with kv_len,
/// so at or after 82fcf09f77) writes it.
#include "harness/ir/kernel_set.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::cuda_triton {

inline constexpr const char* kTritonSdpaOp = "triton.sdpa.default";

/// BLOCK_N of the power-of-2 kernel is autotuned in {32, 64, 128} (the
/// semantics page; the stored sdpa.py copies of 2025-12 to 2026-03 list 256
/// too); the model takes 64. Besides the f32 rounding order it decides how many
/// zero-padded keys an unmasked, non-causal call's last tile lets into the
/// softmax (64 * ceil(Lkv / 64) - Lkv here; another config, another count).
inline constexpr int64_t kPow2BlockN = 64;
/// BLOCK_M of the power-of-2 kernel, autotuned in {16, ..., 128}: the model
/// takes 64. It decides which KV tiles are skipped (no row of the query
/// tile keeps a key there), which shows only where V holds inf or NaN at a
/// skipped tile; the cuda case space draws finite data only.
inline constexpr int64_t kPow2BlockM = 64;

/// A deliberately wrong program for the self-tests. `unsafe_softmax`:
/// the online softmax as at executorch 4495d959e2 (2025-12-17, stored
/// pytorch/executorch 7739119), before c8f0e61b69's safe_diff guards and
/// 6b5273f289's tile skipping: a tile before a row's first kept key (every
/// tile of a fully masked row) gives exp(-inf - -inf) = NaN, which then
/// stays in the row's accumulators.
enum class SdpaFault { none, unsafe_softmax };

/// The ExecuTorch tree whose triton.sdpa is modelled (cuda option
/// `executorch`). `dec_2025`: 4495d959e2 (2025-12-17), read in the stored
/// pytorch/executorch sdpa.py at 7739119: enable_gqa refused, equal head
/// counts, a bool mask [B, H, Lq, Lkv] of any H (dim 1 unchecked) whose
/// programs read head 0's rows for every head (no head stride), no
/// safe_diff, no tile skipping, and that tree's texts. Its exact twin
/// computes the same program without rounding.
enum class SdpaTree { main, dec_2025 };

/// The kernel for `triton.sdpa.default(query, key, value, attn_mask=None,
/// dropout_p=0.0, is_causal=False, scale=0.0, enable_gqa=False)` on
/// [B, H, L, D] bf16 tensors. `emulated` (or `naive`): the Triton program's
/// arithmetic (f32 scores and accumulators, P rounded to bf16 before P @ V,
/// the output rounded to bf16); `exact`: the same semantics in long double
/// without rounding (the soundness twin). The wrapper's RuntimeErrors are
/// KernelError::recoverable with the upstream texts.
KernelFn triton_sdpa_kernel(Numerics numerics, SdpaFault fault = SdpaFault::none,
                            SdpaTree tree = SdpaTree::main);

}  // namespace sdpa::cuda_triton
