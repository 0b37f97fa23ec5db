#pragma once
/// Which calls a target's entry form takes: the generators draw only these.
#include <string>
#include <utility>
#include <vector>

#include "harness/case/case.h"

namespace sdpa {

struct CaseSpace {
  std::vector<DType> dtypes = {DType::f32, DType::f16, DType::bf16, DType::f64};
  bool bshd_layout = true;    // entry form may hold q, k, v as [..., L, H, D]
  bool start_pos = false;     // the entry form carries a KV-cache position
  /// The entry form reads k and v from a KV cache at position start_pos (a
  /// decode or chunked-prefill step): start_pos is the symbol "sp" with
  /// sp + Lq <= Lkv at every run, Lkv is the cache length, a constant
  /// (GenPolicy's cache knobs), and a call without a mask is causal at
  /// start_pos (alignment start-pos, which causal_alignments must list).
  bool kv_cache = false;
  bool dropout = true;
  bool masks = true;
  /// Only causal calls: is_causal, or a mask of pattern causal over the full
  /// [Lq, Lkv] (leading dims may broadcast; an additive one filled with
  /// -inf): the promise of an option such as the llm pass's assume_causal_mask.
  bool causal_only = false;
  bool dynamic_dims = true;
  bool grouped_heads = true;       // Hq != Hkv, enable_gqa (else Hkv = Hq, no enable_gqa)
  bool distinct_value_dim = true;  // E != Ev (else Ev = E)
  bool causal = true;              // is_causal
  bool explicit_scale = true;      // a scale argument (else the default 1/sqrt(E))
  /// The smallest power-of-two head dim the entry form's kernels build for
  /// (0: every one; Triton's tl.dot needs K >= 16). The head-dim cap reaches
  /// it at every size (cut at the policy's max_head_dim), and a
  /// power-of-two head dim is at least it with
  /// GenPolicy::p_head_dim_at_kernel_min: the kernels compute calls at every
  /// size, and the smaller powers of two, which they refuse, are still drawn.
  int64_t kernel_min_pow2_head_dim = 0;
  /// Non-finite data (NaN, +-inf, range-edge values in q, k, v, masks):
  /// only where every kernel model of the target follows its upstream on it.
  bool non_finite = false;
  /// Zero-size dims (batch 0, Lq 0, Lkv 0) where aten accepts them: only
  /// where the target's models follow their upstream on empty tensors.
  bool empty = false;
  int max_batch_rank = 2;
  /// Weight of each batch rank (index = rank) when the entry form prefers
  /// some ranks (a 4-D [B, H, L, D] op); empty: the generation policy's.
  std::vector<double> batch_rank_weights;
  /// The entry-form variants the target defines, each with its weight; the
  /// generators draw one into Case::variant (shrinking toward the first).
  /// Empty: the target has one form and Case::variant stays empty.
  std::vector<std::pair<std::string, double>> variants;
  /// The causal alignments a causal call of the entry form may carry.
  std::vector<CausalAlignment> causal_alignments = {CausalAlignment::top_left};
};

}  // namespace sdpa
