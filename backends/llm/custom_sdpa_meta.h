#pragma once
/// The Python Meta kernel of llama.custom_sdpa (extension/llm/custom_ops/
/// custom_ops.py, _validate_params, semantics/llm-and-cuda.md §1.6, §2.1
/// item 7): it runs while export traces the call, so its asserts fail the
/// pass or module swap that emits the op, with the texts below.
#include "backends/llm/executorch_revision.h"
#include "harness/ir/graph.h"
#include "harness/ir/shape_env.h"

namespace sdpa::llm {

/// attn_mask.dim() == 2 and dtype float32 or float16; throws std::runtime_error
/// with "AssertionError in custom_sdpa meta (_validate_params): " and the
/// assert's own message, dtypes and sizes as Python prints them.
void meta_check_mask(const ValueInfo& mask);

/// q's dtype float32, bfloat16 or float16 (float32 only in a tree
/// before 411a01e1b9, `rev`), and key.size() == value.size(), which a
/// symbolic size answers on its hint, as fake tensors do; throws
/// std::runtime_error.
void meta_check_qkv(const Graph& g, ValueRef q, ValueRef k, ValueRef v, const ShapeEnv& env,
                    const EtRevision& rev = {});

}  // namespace sdpa::llm
