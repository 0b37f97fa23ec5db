#include "generators/mask_gen.h"

#include <algorithm>

#include "generators/draws.h"

namespace sdpa {
namespace {

using rc::Gen;
namespace gen = rc::gen;

double weight_of(const GenPolicy& p, GenPolicy::MaskKind kind) {
  for (const auto& [k, w] : p.mask_kind_weights)
    if (k == kind) return w;
  return 0.0;
}

}  // namespace

Gen<AttentionDraw> gen_attention(const GenPolicy& p, const CaseSpace& space, size_t max_batch_rank,
                                 int64_t max_len) {
  using K = AttentionDraw::Kind;
  using MK = GenPolicy::MaskKind;
  const double none = weight_of(p, MK::none), causal = std::clamp(p.p_causal, 0.0, 1.0);
  const double masks = space.masks ? 1.0 : 0.0;
  const Weighted<K> kinds = {{K::none, none * (1 - causal)},
                             {K::causal, none * causal},
                             {K::bool_mask, masks * weight_of(p, MK::bool_mask)},
                             {K::additive, masks * weight_of(p, MK::additive)}};
  const auto full = static_cast<int64_t>(max_batch_rank + 3);
  return gen::build<AttentionDraw>(
      gen::set(&AttentionDraw::kind, gen_weighted(kinds, "GenPolicy.mask_kind_weights")),
      gen::set(&AttentionDraw::pattern,
               gen_weighted(p.mask_pattern_weights, "GenPolicy.mask_pattern_weights")),
      gen::set(&AttentionDraw::keep,
               gen_weighted(p.mask_keep_weights, "GenPolicy.mask_keep_weights")),
      gen::set(&AttentionDraw::extent, gen_size(0, max_len)),
      gen::set(&AttentionDraw::fill,
               gen_weighted(p.mask_fill_weights, "GenPolicy.mask_fill_weights")),
      gen::set(&AttentionDraw::query_dtype, gen_flag(p.p_mask_query_dtype)),
      gen::set(&AttentionDraw::rank, gen_size(2, full, {full}, p.p_mask_full_rank)),
      gen::set(&AttentionDraw::rank_one, gen_flag(p.p_mask_rank_one)),
      gen::set(&AttentionDraw::ones,
               gen_each(std::vector<Gen<bool>>(max_batch_rank + 3, gen_flag(p.p_mask_dim_one)))));
}

void apply_attention(const AttentionDraw& d, Case& c, bool causal_only) {
  using K = AttentionDraw::Kind;
  if (d.kind == K::none && !causal_only) return;
  if (d.kind == K::causal || d.kind == K::none) {
    c.is_causal = true;
    return;
  }
  const SymShape scores = score_shape(c);
  const int64_t rank =
      d.rank_one && !causal_only ? 1 : std::min(d.rank, static_cast<int64_t>(scores.size()));
  int64_t max_kv_len = 1;
  for (const auto& at : c.runs()) max_kv_len = std::max(max_kv_len, c.kv_len.eval(at));

  MaskSpec m;
  const bool additive = d.kind == K::additive;
  const bool low_precision = c.dtype == DType::f16 || c.dtype == DType::bf16;
  m.dtype = !additive ? DType::b8 : d.query_dtype && low_precision ? c.dtype : DType::f32;
  m.shape.assign(scores.end() - rank, scores.end());
  for (int64_t i = 0; i < rank; ++i)
    if (d.ones[i] && !(causal_only && i >= rank - 2)) m.shape[i] = 1;
  m.pattern = causal_only ? MaskPattern::causal : d.pattern;
  switch (m.pattern) {
    case MaskPattern::random:
    case MaskPattern::full_row: m.param = d.keep; break;
    case MaskPattern::window:
      m.param = static_cast<double>(std::clamp<int64_t>(d.extent, 1, max_kv_len));
      break;
    case MaskPattern::padding: m.param = static_cast<double>(std::min(d.extent, max_kv_len)); break;
    case MaskPattern::causal:
    case MaskPattern::keep_all: break;
  }
  // A finite fill does not mask a score of its size: not causal in effect.
  if (additive) m.fill = causal_only ? MaskFill::neg_inf : d.fill;  // bool masks have no fill: keep the default
  c.mask = m;
}

}  // namespace sdpa
