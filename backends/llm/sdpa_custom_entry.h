#pragma once
/// The entry form `sdpa-custom`: llama's attention in a KV-cache step
/// (ExecuTorch examples/models/llama/attention.py, semantics/llm-and-cuda.md
/// §2.3) as export gives it, for replace_sdpa_with_custom_op to swap:
///
///   input_pos [1] -> select -> _local_scalar_dense   (start_pos, the symbol "sp")
///   mask = aten.slice.Tensor(causal buffer, 0, sp, sp + Lq)
///          (Attention: the buffer tril(ones(Lkv, Lkv)) narrowed to the
///          rows of the step), or the mask the model passes (the
///          ring-buffer path's), a graph input
///   SDPA module: k, v (the cache after update, [B, Hkv, Lkv, D]) through
///          repeat_interleave(Hq / Hkv, dim 1), aten SDPA(q, k, v, mask, 0.0),
///          transpose(1, 2), contiguous, view [B, Lq, Hq * D]
///   then view [B, Lq, Hq, D] and transpose(1, 2): how the harness reads
///          the module's output per head, data movement only.
///
/// The call it computes is the case: causal at start_pos (alignment
/// start-pos, row i keeps j <= start_pos + i) without a mask, the mask as
/// given otherwise.
#include <optional>
#include <string>

#include "harness/case/case.h"
#include "harness/ir/graph.h"

namespace sdpa::llm {

inline constexpr const char* kCausalMaskBuffer = "mask";  // the attention's registered buffer
inline constexpr const char* kSliceOp = "aten.slice.Tensor";
inline constexpr const char* kSelectOp = "aten.select.int";
inline constexpr const char* kItemOp = "aten._local_scalar_dense.default";
inline constexpr const char* kRepeatInterleaveOp = "aten.repeat_interleave.self_int";
inline constexpr const char* kInputPos = "input_pos";  // the placeholder and its runtime input

/// Why the entry form cannot express c, or none.
std::optional<std::string> sdpa_custom_refuses(const Case& c);

/// The graph above; `c` must be one sdpa_custom_refuses accepts.
Graph sdpa_custom_entry_graph(const Case& c);

}  // namespace sdpa::llm
