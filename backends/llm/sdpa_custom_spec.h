#pragma once
/// When SDPACustom computes what the SDPA module computes
/// (semantics/llm-and-cuda.md §1.4-1.6, §2.3), written a second time from
/// the call itself: no graph, no ShapeEnv, no guard code. It names the swap
/// rules a case of the sdpa-custom entry form breaks, so that a guard that
/// gets a rule wrong cannot vouch for itself.
#include <vector>

#include "harness/case/case.h"
#include "harness/ir/shape_env.h"

namespace sdpa::llm {

/// The swap rules that apply to the call `c` of the sdpa-custom entry form,
/// in the guard's order, each with its outcome and sizes: query-length;
/// with use_attention_mask=False causal-slice (the model's mask is its
/// causal rows: a causal case) and cache-bounds (start_pos + Lq <= Lkv);
/// with use_attention_mask=True mask-rank (2-D), mask-dtype (f32) and
/// mask-shape (rows Lq, columns Lkv) of the mask the module gets (a causal
/// case's is the bool [Lq, Lkv] slice). A
/// size rule holds only where it holds at every size the symbols allow.
std::vector<RuleOutcome> sdpa_custom_spec(const Case& c, bool use_attention_mask);

}  // namespace sdpa::llm
