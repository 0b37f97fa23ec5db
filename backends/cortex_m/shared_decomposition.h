#pragma once
/// DecomposeScaledDotProductAttention (backends/transforms/decompose_sdpa.py),
/// the generic decomposition users apply before the Cortex-M quantizer
/// (cortex-m-and-xnnpack.md §1.3, llm-and-cuda.md §2.4). It has no
/// eligibility guard: every aten SDPA node is decomposed or the pass raises.
///
/// 1. _canonicalize_sdpa_call: attn_mask, dropout_p and is_causal positional
///    or as kwargs, scale and enable_gqa as kwargs; any other kwarg raises
///    RuntimeError "Unsupported kwargs for scaled_dot_product_attention: ...".
/// 2. _sdpa_with_gqa reads the head counts at dim 1, as if every call were
///    (B, H, T, D): where q.shape[1] != k.shape[1] it raises ValueError "SDPA
///    head mismatch requires enable_gqa=True: Hq=.., Hk=.." without
///    enable_gqa (also at Hk == 1, where aten broadcasts), ValueError "GQA
///    mismatch: ..." when they do not divide, and otherwise tiles k and v
///    with unsqueeze(2).expand(B, Hk, r, Tk, D).reshape(B, Hq, Tk, D) (head h
///    reads kv head h / r; v is expanded to k's D).
/// 3. The traced ATen math body: sqrt(scale or 1/sqrt(E)) as two mul.Scalar
///    on q and on kᵀ, whose literals become math.sqrt(scale) when a scale is
///    given (ValueError "math domain error" for a negative one); matmul; the
///    causal ones(Lq, Lkv).tril() and a bool mask as where(!m, -inf, 0) added
///    to the scores, a float mask added as is; _safe_softmax; dropout; matmul.
///    enable_gqa still reaches the math body, which repeat_interleaves k and
///    v where the heads at dim -3 differ (a call of rank != 4).
#include <stdexcept>
#include <string>

#include "backends/common/sdpa_entry.h"
#include "harness/ir/graph.h"

namespace sdpa::cortex_m {

/// Deliberately wrong emitters, for the self-tests: the mask, the causal
/// mask or the dropout left out, or the kv heads tiled (h % Hk) instead of
/// interleaved (h / r).
enum class SharedMutant { none, drop_mask, drop_causal, drop_dropout, gqa_tile };

/// What the transform raises, as "<Python exception type>: <message>".
class SharedDecompError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The call as _canonicalize_sdpa_call reads node `n`. Throws
/// SharedDecompError for a kwarg it does not know.
SdpaCall canonicalize_shared_call(const Node& n);

/// Appends the decomposition of `call` (its q, k, v and mask values already
/// in `g`) and returns the output. Throws SharedDecompError where the
/// transform raises (head mismatch, GQA divisibility, a rank other than 4
/// where it tiles, an expand v cannot take) and std::domain_error for a
/// negative explicit scale. Shapes must be static.
ValueRef emit_shared_decomposition(Graph& g, const SdpaCall& call, SharedMutant mutant);

}  // namespace sdpa::cortex_m
