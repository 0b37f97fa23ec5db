#pragma once
/// Generators for the call's scalar arguments: scale, dropout_p, start_pos,
/// and the tensor data spec.
#include <rapidcheck.h>

#include <optional>

#include "generators/gen_policy.h"
#include "generators/lazy_draw.h"
#include "harness/case/case.h"
#include "harness/case/case_space.h"

namespace sdpa {

/// None (1/sqrt(E)), an ordinary value, 0, a negative, a tiny or a huge
/// scale. Shrinks toward none.
rc::Gen<std::optional<double>> gen_scale(const GenPolicy& p);

/// 0, or with p.p_dropout one of p.dropout_weights when space.dropout.
rc::Gen<double> gen_dropout(const GenPolicy& p, const CaseSpace& space);

/// What gen_start_pos draws, before it is fitted to a case's lengths.
struct StartPosDraw {
  // offset, unbacked and other are drawn when read (gen_lazy): only a
  // positive start_pos reads them.
  bool positive = false;        // start_pos > 0, if the case leaves room
  Lazy<int64_t> offset;         // cut to the room; max_len gives bottom-right (Lkv - Lq)
  bool cache = false;           // Lkv = start_pos + Lq, start_pos a symbol
  Lazy<bool> unbacked;          // that symbol has no hint
  Lazy<int64_t> other;          // a runtime value of it besides the hint
  // KV-cache entry forms (apply_kv_cache):
  bool block_edge = false;     // the cache reaches past a key-block edge
  size_t edge = 0;             // which of GenPolicy::cache_block_edges
  int64_t edge_back = 0;       // the run at the edge has start_pos = edge - edge_back % (Lq + 1)
  bool context_range = false;  // sp declared in [0, Lkv - 1], not [0, Lkv - Lq]
};

/// Never positive unless space.start_pos; `offset` in [1, max_len], max_len
/// with p.p_start_pos_bottom_right. Shrinks toward 0, then 1.
rc::Gen<StartPosDraw> gen_start_pos(const GenPolicy& p, const CaseSpace& space, int64_t max_len);

/// The start_pos of draw d for case c (sizes and runtime final): at most the
/// room min(Lkv - Lq) over every runtime size and the hints, because
/// custom_sdpa aborts when start_pos + Lq > Lkv; 0 when there is no room.
SymExpr start_pos_for(const StartPosDraw& d, const Case& c);

/// With d.cache (and d.positive): start_pos becomes symbol "sp" hinted at
/// `offset` (cut to max_len - Lq), Lkv becomes sp + Lq, and every runtime
/// entry gives sp a value. Call before the mask is fitted to the lengths.
/// Returns false (and changes nothing) when the draw is not a cache draw.
bool apply_cache_position(const StartPosDraw& d, int64_t max_len, Case& c);

/// For a KV-cache entry form (CaseSpace::kv_cache), case c with its sizes
/// and runtime final and before its mask is drawn: Lkv becomes the cache length, a constant
/// (Lq's largest size, over its declared range where the score budget
/// allows, plus the drawn Lkv, or with d.block_edge a block edge plus
/// both), and start_pos the symbol "sp" in [0, Lkv - Lq] (d.context_range:
/// [0, Lkv - 1]), hinted at the drawn offset (or the edge position), unbacked
/// with d.unbacked; every runtime entry gives sp a value with sp + Lq <= Lkv:
/// the first (the hint's) past 0 where there is room, the second d.other.
/// The cache stays within `max_elements` for the score tensor [batch..., Hq,
/// Lq, Lkv] and for a [Lkv, Lkv] tensor; a block edge past that is not
/// taken, and Lq's declared range counts only up to `max_len`.
void apply_kv_cache(const StartPosDraw& d, const GenPolicy& p, int64_t max_len, int64_t max_elements, Case& c);

/// Seed (never shrunk), distribution, magnitude and, where space.non_finite,
/// special values with p.p_special; shrinks toward normal, 1.0, no special
/// values (then NaN, q, one element).
rc::Gen<DataSpec> gen_data(const GenPolicy& p, const CaseSpace& space);

/// The special values of p (present with p.p_special); never where !space.non_finite.
rc::Gen<std::optional<SpecialData>> gen_special(const GenPolicy& p, const CaseSpace& space);

}  // namespace sdpa
