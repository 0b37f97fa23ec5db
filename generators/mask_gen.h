#pragma once
/// Generators for the attention restriction: no mask, is_causal, or an
/// explicit bool or additive mask (never a mask with is_causal). The draw
/// does not depend on the case's sizes (so it shrinks on its own);
/// apply_attention fits it to a case.
#include <rapidcheck.h>

#include <cstdint>
#include <vector>

#include "generators/gen_policy.h"
#include "harness/case/case.h"
#include "harness/case/case_space.h"

namespace sdpa {

struct AttentionDraw {
  enum class Kind { none, causal, bool_mask, additive };
  Kind kind = Kind::none;
  MaskPattern pattern = MaskPattern::keep_all;
  double keep = 0.5;   // keep probability of random and full-row
  int64_t extent = 0;  // window width or kept keys, cut to Lkv
  MaskFill fill = MaskFill::neg_inf;
  bool query_dtype = false;  // an additive mask in the f16/bf16 query dtype
  int64_t rank = 2;          // cut to batch+3
  bool rank_one = false;     // overrides rank: a 1-D mask

  std::vector<bool> ones;  // mask dim i broadcast as 1

  // Drawn after the fields above, so that their draws stay as they were.
  bool serving = false;  // a serving pattern replaces `pattern`
  MaskPattern serving_pattern = MaskPattern::left_padding;
  int64_t pad = 0;            // left / per-batch padding, cut to Lkv
  int64_t block_rows = 1;     // block-sparse
  int64_t block_keys = 64;
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
