#include "generators/case_gen.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "generators/draws.h"
#include "generators/dynamic_gen.h"
#include "generators/mask_gen.h"
#include "generators/scalar_gen.h"
#include "generators/shape_gen.h"
#include "harness/case/case_json.h"
#include "harness/case/case_validate.h"

namespace sdpa {
namespace {

using rc::Gen;
namespace gen = rc::gen;

// Every part of a case, drawn independently of the others, so that each
// shrinks on its own: a chain of mapcats would freeze the earlier parts as
// soon as a later one shrinks. gen_case fits the parts together.
struct CaseDraw {
  DType dtype = DType::f32;
  Layout layout = Layout::bhsd;
  Heads heads;
  std::vector<int64_t> batch;
  HeadDims dims;
  Lengths lengths;
  std::optional<double> scale;
  double dropout_p = 0.0;
  DataSpec data;
  DynamicDraw dynamic;
  AttentionDraw attention;
  StartPosDraw start_pos;
  size_t variant = 0;    // index into CaseSpace::variants
  size_t alignment = 0;  // index into CaseSpace::causal_alignments
  std::optional<GenPolicy::EmptyDim> empty;
  std::optional<int64_t> long_len;  // drawn last, so the fields above draw as they did
};

// Caps at one RapidCheck size.
struct Caps {
  int64_t heads, head_dim, batch, len;
  size_t batch_rank;
};

int64_t isqrt(int64_t n) {
  auto r = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
  while (r * r > n) --r;
  while ((r + 1) * (r + 1) <= n) ++r;
  return r;
}

// The length cap is lowered so that every tensor (at most batch * Hq * L *
// max(L, E, Ev) elements) stays within p.max_elements even with every size
// at its cap: a bound from the caps alone keeps the lengths independent of
// the other parts.
Caps caps_at(const GenPolicy& p, const CaseSpace& space, int size) {
  Caps c;
  c.heads = size_cap(p.max_heads, size, 2);
  c.head_dim = size_cap(p.max_head_dim, size, 2);
  // A kernel minimum is reached at every size, so that the kernels compute calls.
  c.head_dim = std::max(c.head_dim, std::min(space.kernel_min_pow2_head_dim, p.max_head_dim));
  c.batch = size_cap(p.max_batch, size, 1);
  c.batch_rank = max_batch_rank(p, space);
  int64_t rows = c.heads;
  for (size_t i = 0; i < c.batch_rank; ++i) rows *= c.batch;
  const int64_t budget = std::min(p.max_elements, SizeLimits{}.max_tensor_elements) / rows;
  c.len = std::max<int64_t>(
      1, std::min({size_cap(p.max_len, size, 2), isqrt(budget), budget / c.head_dim}));
  return c;
}

// Serving paddings reach the longest length drawn at this size.
int64_t max_pad(const GenPolicy& p, const Caps& caps, int size) {
  if (p.p_long_len > 0 && size >= p.long_len_min_size) return std::max(caps.len, p.long_len_max);
  return caps.len;
}

// The variant and alignment come from the target's lists: drawn as indices
// so that they shrink toward the first entry, independently of the rest.
rc::Gen<size_t> gen_variant(const CaseSpace& space) {
  if (space.variants.empty()) return gen::just<size_t>(0);
  std::vector<double> weights;
  for (const auto& [name, w] : space.variants) weights.push_back(w);
  return gen_choice(weights, "CaseSpace.variants");
}

rc::Gen<size_t> gen_alignment(const CaseSpace& space) {
  if (space.causal_alignments.size() < 2) return gen::just<size_t>(0);
  return gen::inRange<size_t>(0, space.causal_alignments.size());
}

// Symbols no size uses any more (after a dim became a constant) are dropped
// with their runtime values.
void drop_unused_symbols(Case& c) {
  std::set<std::string> used;
  auto add = [&](const SymExpr& e) {
    for (const auto& s : e.symbols()) used.insert(s);
  };
  for (const auto& d : c.batch) add(d);
  add(c.q_len);
  add(c.kv_len);
  add(c.start_pos);
  if (c.mask)
    for (const auto& d : c.mask->shape) add(d);
  for (auto it = c.symbols.begin(); it != c.symbols.end();)
    if (used.count(it->first)) {
      ++it;
    } else {
      for (auto& at : c.runtime) at.erase(it->first);
      it = c.symbols.erase(it);
    }
  if (c.symbols.empty()) c.runtime.clear();
}

// A zero-size dim as a boundary value: the first batch dim (one is added
// when the case has none and the space allows it), Lq or Lkv becomes 0, and the mask dims that
// followed it. A length tied to start_pos (a KV-cache shape) stays.
void apply_empty(GenPolicy::EmptyDim d, const CaseSpace& space, Case& c) {
  using E = GenPolicy::EmptyDim;
  if (d == E::batch) {
    if (c.batch.empty() && space.max_batch_rank < 1) return;
    if (c.batch.empty()) {
      c.batch.push_back(SymExpr(0));
    } else {
      const SymExpr old = c.batch[0];
      c.batch[0] = 0;
      if (c.mask) {
        const size_t rank = c.batch.size() + 3, mrank = c.mask->shape.size();
        if (mrank == rank && c.mask->shape[0] == old) c.mask->shape[0] = 0;
      }
    }
    drop_unused_symbols(c);
    return;
  }
  if (!c.start_pos.is_constant()) return;
  SymExpr& len = d == E::q_len ? c.q_len : c.kv_len;
  const SymExpr old = len;
  len = 0;
  c.start_pos = 0;
  if (c.mask && c.mask->shape.size() >= (d == E::q_len ? 2u : 1u)) {
    SymExpr& m = d == E::q_len ? c.mask->shape[c.mask->shape.size() - 2] : c.mask->shape.back();
    if (m == old) m = 0;
  }
  drop_unused_symbols(c);
}

// Whether every tensor of c (q, k, v, scores, output; a mask is at most the
// scores) fits `limit` elements at every runtime size and at the hints.
bool fits(const Case& c, int64_t limit) {
  std::vector<Assignment> points = c.runs();
  if (auto hints = c.shape_env().hints()) points.push_back(*hints);
  for (const auto& at : points)
    for (const SymShape& shape : {query_shape(c), key_shape(c), value_shape(c), score_shape(c), output_shape(c)}) {
      double n = 1;
      for (int64_t d : eval_shape(shape, at)) n *= static_cast<double>(d);
      if (n > static_cast<double>(limit)) return false;
    }
  return true;
}

// A long length past the size cap for the longer length of the relation,
// where that length (both for equal) is still static and every tensor fits.
void apply_long_length(std::optional<int64_t> len, const Lengths& drawn, const GenPolicy& p, Case& c) {
  using R = GenPolicy::LengthRelation;
  if (!len) return;
  const bool kv = drawn.relation != R::q_longer, q = drawn.relation == R::q_longer || drawn.relation == R::equal;
  if ((kv && !c.kv_len.is_constant()) || (q && !c.q_len.is_constant())) return;
  const Lengths now{c.q_len.is_constant() ? c.q_len.constant() : 0, c.kv_len.is_constant() ? c.kv_len.constant() : 0,
                    drawn.relation};
  const Lengths l = with_long_length(now, *len);
  Case trial = c;
  if (kv) trial.kv_len = l.Lkv;
  if (q) trial.q_len = l.Lq;
  if (fits(trial, std::min(p.max_elements, SizeLimits{}.max_tensor_elements))) c = std::move(trial);
}

Case fit(const CaseDraw& d, const GenPolicy& p, const Caps& caps, const CaseSpace& space) {
  Case c;
  c.dtype = d.dtype;
  c.layout = d.layout;
  c.q_heads = d.heads.Hq;
  c.kv_heads = d.heads.Hkv;
  c.enable_gqa = d.heads.enable_gqa;
  c.batch.assign(d.batch.begin(), d.batch.end());
  c.head_dim = d.dims.E;
  c.value_dim = d.dims.Ev;
  c.q_len = d.lengths.Lq;
  c.kv_len = d.lengths.Lkv;
  c.scale = d.scale;
  c.dropout_p = d.dropout_p;
  c.data = d.data;
  apply_dynamic(d.dynamic, p, caps.len, caps.batch, c);
  if (space.kv_cache) {
    // A KV-cache step at position start_pos: the drawn mask (fitted to the
    // cache), or else causal at that position.
    apply_kv_cache(d.start_pos, p, caps.len, std::min(p.max_elements, SizeLimits{}.max_tensor_elements), c);
    apply_attention(d.attention, c, space.causal_only);
    if (!c.mask) c.is_causal = true;
  } else {
    const bool cache = apply_cache_position(d.start_pos, caps.len, c);
    if (!cache) apply_long_length(d.long_len, d.lengths, p, c);  // a KV-cache Lkv is start_pos + Lq
    apply_attention(d.attention, c, space.causal_only);
    if (!cache) c.start_pos = start_pos_for(d.start_pos, c);
  }
  // What the entry form cannot express is mapped to the nearest call it can.
  if (!space.grouped_heads) c.kv_heads = c.q_heads, c.enable_gqa = false;
  if (!space.distinct_value_dim) c.value_dim = c.head_dim;
  if (!space.causal) c.is_causal = false;
  if (!space.explicit_scale) c.scale.reset();
  if (!space.variants.empty()) c.variant = space.variants[d.variant].first;
  if (c.is_causal && !space.causal_alignments.empty())
    c.causal_alignment = space.causal_alignments[d.alignment];
  if (d.empty) apply_empty(*d.empty, space, c);
  // Special values meant for a mask go to k when there is no additive one.
  if (c.data.special && c.data.special->tensor == "mask" && (!c.mask || c.mask->dtype == DType::b8))
    c.data.special->tensor = "k";
  return c;
}

// The generator of one size: a tree of some hundred small generators,
// each holding a copy of the policy.
Gen<Case> case_gen_at(const GenPolicy& p, const CaseSpace& space, int size) {
  const Caps caps = caps_at(p, space, size);
  Gen<CaseDraw> draw = gen::build<CaseDraw>(
      gen::set(&CaseDraw::dtype, gen_dtype(p, space)),
      gen::set(&CaseDraw::layout, gen_layout(p, space)),
      gen::set(&CaseDraw::heads, gen_heads(p, caps.heads)),
      gen::set(&CaseDraw::batch, gen_batch(p, space, caps.batch)),
      gen::set(&CaseDraw::dims, gen_head_dims(p, caps.head_dim, space.kernel_min_pow2_head_dim)),
      gen::set(&CaseDraw::lengths, gen_lengths(p, caps.len)),
      gen::set(&CaseDraw::scale, gen_scale(p)),
      gen::set(&CaseDraw::dropout_p, gen_dropout(p, space)),
      gen::set(&CaseDraw::data, gen_data(p, space)),
      gen::set(&CaseDraw::dynamic, gen_dynamic(p, space, caps.batch_rank, caps.len)),
      gen::set(&CaseDraw::attention, gen_attention(p, space, caps.batch_rank, caps.len, max_pad(p, caps, size))),
      gen::set(&CaseDraw::start_pos, gen_start_pos(p, space, caps.len)),
      gen::set(&CaseDraw::variant, gen_variant(space)),
      gen::set(&CaseDraw::alignment, gen_alignment(space)),
      gen::set(&CaseDraw::empty, gen_empty(p, space)),
      gen::set(&CaseDraw::long_len, gen_long_length(p, size)));
  // Shared, not copied: RapidCheck copies the mapper into every draw's shrinkable.
  struct Fit {
    GenPolicy p;
    Caps caps;
    CaseSpace space;
  };
  auto fit_with = std::make_shared<const Fit>(Fit{p, caps, space});
  return gen::map(draw, [fit_with](const CaseDraw& d) { return fit(d, fit_with->p, fit_with->caps, fit_with->space); });
}

// case_gen_at of each size, built on first use: building the tree costs
// about as much as drawing a case from it, and a campaign draws many
// cases of each size. Generators are immutable, so one serves every draw.
class CaseGens {
 public:
  CaseGens(GenPolicy p, CaseSpace space) : p_(std::move(p)), space_(std::move(space)) {}
  Gen<Case> at(int size) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = gens_.find(size);
    if (it == gens_.end()) it = gens_.emplace(size, case_gen_at(p_, space_, size)).first;
    return it->second;
  }

 private:
  const GenPolicy p_;
  const CaseSpace space_;
  std::mutex mutex_;
  std::map<int, Gen<Case>> gens_;
};

}  // namespace

Gen<Case> gen_case(const GenPolicy& p, const CaseSpace& space) {
  auto gens = std::make_shared<CaseGens>(p, space);
  return gen::withSize([gens](int size) { return gens->at(size); });
}

void showValue(const Case& c, std::ostream& os) { os << case_to_json(c).dump(); }

}  // namespace sdpa
