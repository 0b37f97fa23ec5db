#pragma once
/// A model of ExecuTorch's llama::custom_sdpa CPU kernel (op_sdpa.cpp and
/// op_sdpa_impl.h at executorch main cff6f4dd32), semantics/llm-and-cuda.md §1.
#include "harness/ir/kernel_set.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::llm {

inline constexpr const char* kCustomSdpaOp = "llama.custom_sdpa.default";

/// The kernel for `llama.custom_sdpa.default(query, key, value, start_pos,
/// attn_mask, drpout_p, is_causal, scale)` on [B, S, H, D] tensors, in
/// `exact` numerics (long double, no rounding) or `emulated` ones (f32
/// accumulation, P rounded to the activation dtype before P @ V).
/// Recoverable checks (ET_KERNEL_CHECK) raise KernelError::recoverable,
/// fatal ones (ET_CHECK_MSG) KernelError::fatal, with the upstream texts.
/// `pv_accumulation` other than f32 is a deliberately wrong kernel (the
/// self-tests): P @ V summed in that type instead of f32.
KernelFn custom_sdpa_kernel(Numerics numerics, DType pv_accumulation = DType::f32);

/// q_split_size of cpu_flash_attention for a query length: 256, 64 or 32.
int64_t q_split_size(int64_t Lq);
inline constexpr int64_t kKvSplitSize = 512;

}  // namespace sdpa::llm
