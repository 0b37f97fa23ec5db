#pragma once
/// Generators for the attention restriction: no mask, is_causal, or an
/// explicit bool or additive mask (never a mask with is_causal). The draw
/// does not depend on the case's sizes (so it shrinks on its own);
/// apply_attention fits it to a case.
#include <rapidcheck.h>

#include <cstdint>
#include <vector>

#include "generators/gen_policy.h"
#include "generators/lazy_draw.h"
#include "harness/case/case.h"
#include "harness/case/case_space.h"

namespace sdpa {

struct AttentionDraw {
  enum class Kind { none, causal, bool_mask, additive };
  Kind kind = Kind::none;
  // Drawn when read (gen_lazy): a call without a mask reads none of them.
  Lazy<MaskPattern> pattern;
  Lazy<double> keep;      // keep probability of random and full-row
  Lazy<int64_t> extent;   // window width or kept keys, cut to Lkv
  Lazy<MaskFill> fill;
  Lazy<bool> query_dtype;  // an additive mask in the f16/bf16 query dtype
  Lazy<int64_t> rank;      // cut to batch+3
  Lazy<bool> rank_one;     // overrides rank: a 1-D mask

  Lazy<std::vector<bool>> ones;  // mask dim i broadcast as 1

  // Drawn after the fields above, so that their draws stay as they were.
  Lazy<bool> serving;  // a serving pattern replaces `pattern`
  Lazy<MaskPattern> serving_pattern;
  Lazy<int64_t> pad;         // left / per-batch padding, cut to Lkv
  Lazy<int64_t> block_rows;  // block-sparse
  Lazy<int64_t> block_keys;
};

/// Kinds from p.mask_kind_weights and p.p_causal (masks only when
/// space.masks); `extent` in [0, max_len], `pad` in [0, max_pad];
/// `rank` in [2, max_batch_rank + 3],
/// the highest with p.p_mask_full_rank; a serving pattern with
/// p.p_serving_mask. Shrinks toward Kind::none, then a bool keep-all mask
/// of shape [Lq, Lkv]; a serving mask toward the drawn pattern, small
/// blocks and a small padded share.
rc::Gen<AttentionDraw> gen_attention(const GenPolicy& p, const CaseSpace& space,
                                     size_t max_batch_rank, int64_t max_len, int64_t max_pad);

/// Sets c.is_causal or c.mask from draw d, for c's final sizes and symbols:
/// the mask shape is the trailing dims of [batch..., Hq, Lq, Lkv], each the
/// score dim's own size expression or 1, so it broadcasts at every runtime
/// size.
/// A serving pattern takes the serving shape (GenPolicy::p_serving_mask),
/// its padding cut to the longest runtime Lkv, and its blocks.
/// With `causal_only` every call is causal: a draw of no mask becomes
/// is_causal, a mask takes pattern causal over the full [Lq, Lkv] (an
/// additive one filled with -inf).
void apply_attention(const AttentionDraw& d, Case& c, bool causal_only = false);

}  // namespace sdpa
