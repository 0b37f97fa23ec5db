#include "generators/shape_gen.h"

#include <algorithm>

#include "generators/draws.h"
#include "generators/lazy_draw.h"
#include "harness/case/case_validate.h"

namespace sdpa {
namespace {

using rc::Gen;
namespace gen = rc::gen;

std::vector<int64_t> powers_of_two_upto(int64_t max) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= max; v *= 2) out.push_back(v);
  return out;
}

Gen<int64_t> gen_length(const GenPolicy& p, int64_t lo, int64_t hi) {
  return gen_size(lo, hi, p.tile_edges, p.p_tile_edge_len);
}

// One head dim: a power of two with p.p_head_dim_pow2, else log-uniform.
// With a kernel minimum, the powers of two are split at it, each side
// drawn as a part of its own so that each shrinks alone.
Gen<int64_t> gen_head_dim(const GenPolicy& p, int64_t max_head_dim, int64_t kernel_min_pow2) {
  const std::vector<int64_t> pow2 = powers_of_two_upto(max_head_dim);
  Weighted<int64_t> below, at_least;
  for (int64_t v : pow2) (v < kernel_min_pow2 ? below : at_least).push_back({v, 1.0});
  // No minimum, or none of the powers of two under the cap reaches it.
  if (below.empty() || at_least.empty()) return gen_size(1, max_head_dim, pow2, p.p_head_dim_pow2);
  return gen::apply(
      [](bool is_pow2, bool large, const Lazy<int64_t>& small_pow2, const Lazy<int64_t>& large_pow2,
         const Lazy<int64_t>& other) {
        if (!is_pow2) return other.get();
        return large ? large_pow2.get() : small_pow2.get();
      },
      gen_flag(p.p_head_dim_pow2), gen_flag(p.p_head_dim_at_kernel_min),
      gen_lazy(gen_weighted(below, "powers of two below CaseSpace.kernel_min_pow2_head_dim")),
      gen_lazy(gen_weighted(at_least, "powers of two from CaseSpace.kernel_min_pow2_head_dim")),
      gen_lazy(gen_size(1, max_head_dim)));
}

}  // namespace

Gen<DType> gen_dtype(const GenPolicy& p, const CaseSpace& space) {
  Weighted<DType> options;
  for (DType d : space.dtypes) {
    auto it = std::find_if(p.dtype_weights.begin(), p.dtype_weights.end(),
                           [d](const auto& w) { return w.first == d; });
    options.push_back({d, it == p.dtype_weights.end() ? 1.0 : it->second});
  }
  return gen_weighted(options, "GenPolicy.dtype_weights");
}

Gen<Layout> gen_layout(const GenPolicy& p, const CaseSpace& space) {
  return gen::map(gen_flag(space.bshd_layout ? p.p_bshd : 0.0),
                  [](bool bshd) { return bshd ? Layout::bshd : Layout::bhsd; });
}

Gen<Heads> gen_heads(const GenPolicy& p, int64_t max_heads) {
  using HL = GenPolicy::HeadLayout;
  Weighted<int64_t> groups;
  for (auto [g, w] : p.group_size_weights)
    groups.push_back({g, g >= 2 && g <= max_heads ? w : 0.0});
  const bool any_group =
      std::any_of(groups.begin(), groups.end(), [](const auto& g) { return g.second > 0; });
  if (!any_group) groups = {{2, 1.0}};  // never used: GQA gets weight 0 below
  Weighted<HL> layouts;
  for (auto [layout, w] : p.head_layout_weights) {
    const bool possible = layout == HL::mha || (layout == HL::mqa && max_heads >= 2) ||
                          (layout == HL::gqa && any_group);
    layouts.push_back({layout, possible ? w : 0.0});
  }
  // All parts are drawn independently and combined, so each shrinks on its
  // own (a mapcat would freeze the layout once the head count shrinks);
  // those one layout reads are drawn when read (gen_lazy).
  return gen::apply(
      [max_heads](HL layout, const Lazy<int64_t>& h, const Lazy<int64_t>& g, const Lazy<int64_t>& kv,
                  const Lazy<bool>& gqa_mha, const Lazy<bool>& gqa_mqa) {
        switch (layout) {
          case HL::mha: return Heads{h.get(), h.get(), gqa_mha.get()};
          case HL::mqa: return Heads{std::max<int64_t>(h.get(), 2), 1, gqa_mqa.get()};
          case HL::gqa: break;
        }
        const int64_t Hkv = 1 + (kv.get() - 1) % (max_heads / g.get());  // wrapped so that g * Hkv fits
        return Heads{g.get() * Hkv, Hkv, true};
      },
      gen_weighted(layouts, "GenPolicy.head_layout_weights"), gen_lazy(gen_size(1, max_heads)),
      gen_lazy(gen_weighted(groups, "GenPolicy.group_size_weights")),
      gen_lazy(gen_size(1, max_heads, {2}, 0.5)),  // else Hkv = 1 would crowd out true GQA at small caps
      gen_lazy(gen_flag(p.p_enable_gqa_mha)), gen_lazy(gen_flag(p.p_enable_gqa_mqa)));
}

size_t max_batch_rank(const GenPolicy& p, const CaseSpace& space) {
  if (p.batch_rank_weights.empty()) throw std::invalid_argument("GenPolicy: no batch rank weights");
  const auto limit = std::min<int64_t>(space.max_batch_rank, SizeLimits{}.max_batch_rank);
  return std::min(p.batch_rank_weights.size() - 1,
                  static_cast<size_t>(std::max<int64_t>(limit, 0)));
}

Gen<std::vector<int64_t>> gen_batch(const GenPolicy& p, const CaseSpace& space, int64_t max_batch) {
  const size_t max_rank = max_batch_rank(p, space);
  const std::vector<double>& preferred =
      space.batch_rank_weights.empty() ? p.batch_rank_weights : space.batch_rank_weights;
  std::vector<double> weights(preferred.begin(),
                              preferred.begin() + std::min(max_rank + 1, preferred.size()));
  return gen::apply(
      [](size_t rank, const std::vector<Lazy<int64_t>>& sizes) {
        std::vector<int64_t> dims;
        for (size_t i = 0; i < rank; ++i) dims.push_back(sizes[i].get());  // only these are drawn
        return dims;
      },
      gen_choice(weights, "GenPolicy.batch_rank_weights"),
      gen_each(std::vector<Gen<Lazy<int64_t>>>(max_rank, gen_lazy(gen_size(1, max_batch)))));
}

Gen<HeadDims> gen_head_dims(const GenPolicy& p, int64_t max_head_dim, int64_t kernel_min_pow2) {
  auto dim = gen_head_dim(p, max_head_dim, kernel_min_pow2);
  return gen::apply(
      [max_head_dim](int64_t e, bool differs, const Lazy<int64_t>& drawn_ev) {
        if (!differs) return HeadDims{e, e};
        int64_t ev = drawn_ev.get();
        if (ev == e) ev = e < max_head_dim ? e + 1 : e - 1;
        return HeadDims{e, ev};
      },
      dim, gen_flag(max_head_dim >= 2 ? p.p_value_dim_differs : 0.0), gen_lazy(dim));
}

Gen<std::optional<GenPolicy::EmptyDim>> gen_empty(const GenPolicy& p, const CaseSpace& space) {
  using E = std::optional<GenPolicy::EmptyDim>;
  if (!space.empty) return gen::just(E());
  return gen::apply([](bool on, const Lazy<GenPolicy::EmptyDim>& d) { return on ? E(d.get()) : E(); },
                    gen_flag(p.p_empty), gen_lazy(gen_weighted(p.empty_dim_weights, "GenPolicy.empty_dim_weights")));
}

Gen<Lengths> gen_lengths(const GenPolicy& p, int64_t max_len) {
  using R = GenPolicy::LengthRelation;
  Weighted<R> relations;
  for (auto [r, w] : p.length_relation_weights)
    relations.push_back({r, r == R::q_shorter || r == R::q_longer ? (max_len >= 2 ? w : 0.0) : w});
  // `a` is the longer length and `b` the shorter, taken modulo to fit below
  // `a`: drawn apart, each shrinks on its own.
  return gen::apply(
      [](R relation, int64_t a, const Lazy<int64_t>& b) {  // b: drawn when read
        switch (relation) {
          case R::decode: return Lengths{1, a, relation};
          case R::equal: return Lengths{a, a, relation};
          case R::q_shorter:
          case R::q_longer: break;
        }
        const int64_t longer = std::max<int64_t>(a, 2), shorter = 1 + (b.get() - 1) % (longer - 1);
        if (relation == R::q_shorter) return Lengths{shorter, longer, relation};
        return Lengths{longer, shorter, relation};
      },
      gen_weighted(relations, "GenPolicy.length_relation_weights"), gen_length(p, 1, max_len),
      gen_lazy(gen_length(p, 1, max_len)));
}

Gen<std::optional<int64_t>> gen_long_length(const GenPolicy& p, int size) {
  using L = std::optional<int64_t>;
  if (!(p.p_long_len > 0) || size < p.long_len_min_size) return gen::just(L());
  return gen::apply([](bool on, const Lazy<int64_t>& len) { return on ? L(len.get()) : L(); },
                    gen_flag(p.p_long_len),
                    gen_lazy(gen_size(1, std::max<int64_t>(1, p.long_len_max), p.long_tile_edges, p.p_long_tile_edge)));
}

Lengths with_long_length(const Lengths& l, int64_t len) {
  using R = GenPolicy::LengthRelation;
  Lengths out = l;
  if (l.relation != R::q_longer && len > l.Lkv) out.Lkv = len;
  if ((l.relation == R::q_longer || l.relation == R::equal) && len > l.Lq) out.Lq = len;
  return out;
}

}  // namespace sdpa
