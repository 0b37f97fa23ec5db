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
                                 int64_t max_len, int64_t max_pad) {
  using K = AttentionDraw::Kind;
  using MK = GenPolicy::MaskKind;
  const double none = weight_of(p, MK::none), causal = std::clamp(p.p_causal, 0.0, 1.0);
  const double masks = space.masks ? 1.0 : 0.0;
  const Weighted<K> kinds = {{K::none, none * (1 - causal)},
                             {K::causal, none * causal},
                             {K::bool_mask, masks * weight_of(p, MK::bool_mask)},
                             {K::additive, masks * weight_of(p, MK::additive)}};
  const auto full = static_cast<int64_t>(max_batch_rank + 3);
  // Every field but the kind drawn when read (gen_lazy): same Random, same shrinks.
  auto weighted = [](const auto& options, const char* what) { return gen_lazy(gen_weighted(options, what)); };
  return gen::build<AttentionDraw>(
      gen::set(&AttentionDraw::kind, gen_weighted(kinds, "GenPolicy.mask_kind_weights")),
      gen::set(&AttentionDraw::pattern, weighted(p.mask_pattern_weights, "GenPolicy.mask_pattern_weights")),
      gen::set(&AttentionDraw::keep, weighted(p.mask_keep_weights, "GenPolicy.mask_keep_weights")),
      gen::set(&AttentionDraw::extent, gen_lazy(gen_size(0, max_len))),
      gen::set(&AttentionDraw::fill, weighted(p.mask_fill_weights, "GenPolicy.mask_fill_weights")),
      gen::set(&AttentionDraw::query_dtype, gen_lazy(gen_flag(p.p_mask_query_dtype))),
      gen::set(&AttentionDraw::rank, gen_lazy(gen_size(2, full, {full}, p.p_mask_full_rank))),
      gen::set(&AttentionDraw::rank_one, gen_lazy(gen_flag(p.p_mask_rank_one))),
      gen::set(&AttentionDraw::ones,
               gen_lazy(gen_each(std::vector<Gen<bool>>(max_batch_rank + 3, gen_flag(p.p_mask_dim_one))))),
      gen::set(&AttentionDraw::serving, gen_lazy(gen_flag(space.masks ? p.p_serving_mask : 0.0))),
      gen::set(&AttentionDraw::serving_pattern,
               weighted(p.serving_pattern_weights, "GenPolicy.serving_pattern_weights")),
      gen::set(&AttentionDraw::pad, gen_lazy(gen_size(0, max_pad, p.tile_edges, p.p_pad_tile_edge))),
      gen::set(&AttentionDraw::block_rows, weighted(p.block_rows_weights, "GenPolicy.block_rows_weights")),
      gen::set(&AttentionDraw::block_keys, weighted(p.block_keys_weights, "GenPolicy.block_keys_weights")));
}

namespace {

bool is_padding(MaskPattern p) {
  return p == MaskPattern::left_padding || p == MaskPattern::per_batch_padding;
}

// The serving shape: the trailing `rank` dims of [batch..., 1, Lq, Lkv]
// (full rank for per-batch padding, whose lengths follow the batch), Lq as
// 1 for a padding pattern where the draw broadcasts that dim.
SymShape serving_shape(const AttentionDraw& d, const SymShape& scores, MaskPattern pattern, int64_t drawn_rank) {
  const auto full = static_cast<int64_t>(scores.size());
  const int64_t rank = pattern == MaskPattern::per_batch_padding ? full : drawn_rank;
  SymShape shape(scores.end() - rank, scores.end());
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t dim = full - rank + i;  // the score dim mask dim i broadcasts to
    if (dim == full - 3) shape[i] = 1;
    if (dim == full - 2 && is_padding(pattern) && d.ones.get()[i]) shape[i] = 1;
  }
  return shape;
}

}  // namespace

void apply_attention(const AttentionDraw& d, Case& c, bool causal_only) {
  using K = AttentionDraw::Kind;
  if (d.kind == K::none && !causal_only) return;
  if (d.kind == K::causal || d.kind == K::none) {
    c.is_causal = true;
    return;
  }
  const SymShape scores = score_shape(c);
  const int64_t rank =
      d.rank_one.get() && !causal_only ? 1 : std::min(d.rank.get(), static_cast<int64_t>(scores.size()));
  int64_t max_kv_len = 1;
  for (const auto& at : c.runs()) max_kv_len = std::max(max_kv_len, c.kv_len.eval(at));

  MaskSpec m;
  const bool additive = d.kind == K::additive;
  const bool low_precision = c.dtype == DType::f16 || c.dtype == DType::bf16;
  m.dtype = !additive ? DType::b8 : d.query_dtype.get() && low_precision ? c.dtype : DType::f32;
  m.pattern = causal_only ? MaskPattern::causal : d.serving.get() ? d.serving_pattern.get() : d.pattern.get();
  if (!causal_only && d.serving.get()) {
    m.shape = serving_shape(d, scores, m.pattern, rank);
  } else {
    m.shape.assign(scores.end() - rank, scores.end());
    for (int64_t i = 0; i < rank; ++i)
      if (d.ones.get()[i] && !(causal_only && i >= rank - 2)) m.shape[i] = 1;
  }
  switch (m.pattern) {
    case MaskPattern::random:
    case MaskPattern::full_row: m.param = d.keep.get(); break;
    case MaskPattern::window:
      m.param = static_cast<double>(std::clamp<int64_t>(d.extent.get(), 1, max_kv_len));
      break;
    case MaskPattern::padding: m.param = static_cast<double>(std::min(d.extent.get(), max_kv_len)); break;
    // Left padding keeps at least the last key (a fully padded row is
    // per-batch padding's, and full-row's); a batch element may pad all.
    case MaskPattern::left_padding: m.param = static_cast<double>(std::min(d.pad.get(), max_kv_len - 1)); break;
    case MaskPattern::per_batch_padding: m.param = static_cast<double>(std::min(d.pad.get(), max_kv_len)); break;
    case MaskPattern::block_sparse:
      m.param = d.keep.get();
      m.block_rows = d.block_rows.get();
      m.block_keys = d.block_keys.get();
      break;
    case MaskPattern::causal:
    case MaskPattern::keep_all: break;
  }
  // A finite fill does not mask a score of its size: not causal in effect.
  if (additive) m.fill = causal_only ? MaskFill::neg_inf : d.fill.get();  // bool masks have no fill: keep the default
  c.mask = m;
}

}  // namespace sdpa
