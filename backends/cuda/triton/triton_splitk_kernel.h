#pragma once
/// A model of ExecuTorch's `triton::sdpa_decode_splitk` (backends/cuda/
/// triton/kernels/sdpa.py at executorch main cff6f4dd32), semantics/
/// llm-and-cuda.md §4.4: flash-decoding for L_q == 1 with the FlashDecoding++
/// fixed maximum phi.
#include "harness/ir/kernel_set.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::cuda_triton {

inline constexpr const char* kTritonSplitKOp = "triton.sdpa_decode_splitk.default";

/// _SPLITK_LKV_THRESHOLD: the KV length of one split, and the routing threshold.
inline constexpr int64_t kSplitKLkvThreshold = 256;
/// BLOCK_N of the split program is autotuned in {32, 64, 128, 256}; the model takes 64.
inline constexpr int64_t kSplitKBlockN = 64;

/// num_splits = min(max(ceil(L_kv / 256), 1), 128).
int64_t splitk_num_splits(int64_t Lkv);

/// How a split normalizes its exponentials. `fixed_phi`: p = exp(s - phi),
/// as semantics §4.4 reads executorch main cff6f4dd32 (FlashDecoding++,
/// since 1014985bc6). `running_max`: a per-split online-softmax maximum
/// rescaled by the global maximum in the reduce, phi ignored ("phi is
/// deprecated"), as a later stored copy of sdpa.py has it.
enum class SplitKMax { fixed_phi, running_max };

/// The kernel for `triton.sdpa_decode_splitk.default(query, key, value,
/// attn_mask=None, dropout_p=0.0, is_causal=False, scale=0.0,
/// enable_gqa=False, phi=5.0)`. `emulated` (or `naive`): the two Triton
/// programs' f32 arithmetic, p = exp(s - phi) with no running maximum, so a
/// score above phi + ~88.7 overflows to inf (the output is NaN) and every
/// score below phi - ~87.3 flushes to 0 (the output is 0). `exact`: the
/// mathematically intended result, the softmax over the visible keys
/// without overflow or underflow; what the accuracy check then reports is
/// the kernel's inaccuracy.
KernelFn triton_splitk_kernel(Numerics numerics, SplitKMax max = SplitKMax::fixed_phi);

}  // namespace sdpa::cuda_triton
