#pragma once
/// A model of ExecuTorch's llama::custom_sdpa CPU kernel (op_sdpa.cpp and
/// op_sdpa_impl.h at executorch main cff6f4dd32), semantics/llm-and-cuda.md §1.
#include "backends/llm/executorch_revision.h"
#include "harness/ir/kernel_set.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::llm {

inline constexpr const char* kCustomSdpaOp = "llama.custom_sdpa.default";

/// The kernel for `llama.custom_sdpa.default(query, key, value, start_pos,
/// attn_mask, drpout_p, is_causal, scale)` on [B, S, H, D] tensors, in
/// `exact` numerics (double, no rounding to a dtype) or `emulated` ones (f32
/// accumulation, P rounded to the activation dtype before P @ V).
/// Recoverable checks (ET_KERNEL_CHECK) raise KernelError::recoverable,
/// fatal ones (ET_CHECK_MSG) KernelError::fatal, with the upstream texts.
/// The deliberately wrong kernels of the self-tests.
struct KernelFault {
  DType pv_accumulation = DType::f32;  // other than f32: P @ V summed in that type
  bool nan_to_zero = false;            // every NaN of the output written as 0
  /// The causal fill drops start_pos: row i keeps j <= i (top-left) among
  /// the start_pos + Lq keys read, as a kernel with the wrong offset would.
  bool causal_offset_ignores_start_pos = false;
  /// num_keys = min(m + qBlockSize, kvSize): the kv loop stops before the
  /// blocks past the query block, the decode bug upstream's comment on
  /// num_keys describes (a decode at start_pos >= 512 reads one block).
  bool num_keys_without_start_pos = false;
};

/// `threads`: the ExecuTorch threadpool's thread count (1: a build without
/// ET_USE_THREADPOOL, or a one-thread pool), which decides which query
/// blocks share a scratch and so inherit each other's row sums. `rev`: the
/// ExecuTorch tree whose argument checks it makes (main by default).
KernelFn custom_sdpa_kernel(Numerics numerics, KernelFault fault = {}, int64_t threads = 1, EtRevision rev = {});

/// Lanes of at::vec::Vectorized<float> (32 bytes: the default, AVX2 and NEON
/// builds), which split _mul_reduce_max_fusion_kernel into a vector part
/// and a scalar tail.
inline constexpr int64_t kVectorLanes = 8;

/// q_split_size of cpu_flash_attention for a query length: 256, 64 or 32.
int64_t q_split_size(int64_t Lq);
inline constexpr int64_t kKvSplitSize = 512;

}  // namespace sdpa::llm
