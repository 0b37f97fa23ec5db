#include "backends/xnnpack/pattern_entry.h"

#include <cmath>
#include <limits>

#include "harness/io/json_reader.h"

namespace sdpa::xnnpack {

const std::vector<PatternVariant>& pattern_variants() {
  static const std::vector<PatternVariant> v = {
      {"qk", ScaleSite::q_and_k, PathOp::none, true, "the pattern graphs' form: sqrt(|scale|) on q and on permuted k"},
      {"qk-no-expand", ScaleSite::q_and_k, PathOp::none, false,
       "as qk, with the no-op expand_copy nodes removed (RemoveNoopExpandCopyPass)"},
      {"q", ScaleSite::q, PathOp::none, true, "the whole scale on q"},
      {"scores", ScaleSite::scores, PathOp::none, true, "the whole scale on the scores after the first bmm"},
      {"qk-clone", ScaleSite::q_and_k, PathOp::clone, true, "as qk, with a clone between q's MUL and its expand_copy"},
      {"qk-transpose", ScaleSite::q_and_k, PathOp::transpose, true,
       "as qk, with k's MUL before its permute_copy (a transpose between the MUL and the bmm)"},
      {"qk-to-copy", ScaleSite::q_and_k, PathOp::to_copy, true,
       "as qk, with a same-dtype _to_copy between q's MUL and its expand_copy"},
      {"qk-safe-softmax-decomposed", ScaleSite::q_and_k, PathOp::none, true,
       "as qk, with _safe_softmax decomposed into _softmax and its all -inf row guard (eq, logical_not, any, "
       "full_like, where)",
       SoftmaxForm::decomposed},
  };
  return v;
}

const PatternVariant& pattern_variant(const std::string& name) {
  if (name.empty()) return pattern_variants().front();
  for (const auto& v : pattern_variants())
    if (v.name == name) return v;
  std::string names;
  for (const auto& v : pattern_variants()) names += (names.empty() ? "" : ", ") + v.name;
  throw InputError("case.variant: target xnnpack has variants " + names + "; got \"" + name + "\"");
}

std::vector<double> scale_literals(const Case& c) {
  const double s = c.effective_scale();
  if (pattern_variant(c.variant).site != ScaleSite::q_and_k) return {s};
  const double root = std::sqrt(std::fabs(s));
  return {std::signbit(s) ? -root : root, root};
}

double op_math_literal(double literal) { return static_cast<double>(static_cast<float>(literal)); }

double traced_scale(const Case& c) {
  double product = 1.0;
  for (double l : scale_literals(c)) product *= op_math_literal(l);  // two f32 values: exact in double
  return product;
}

namespace {

SymExpr product(const SymShape& dims) {
  SymExpr p(1);
  for (const auto& d : dims) p = p * d;
  return p;
}

SymShape with_tail(SymShape head, std::initializer_list<SymExpr> tail) {
  head.insert(head.end(), tail);
  return head;
}

// Swaps the last two dims: the permutation and the shape it gives.
SymShape last_two_swapped(int64_t rank) {
  SymShape perm;
  for (int64_t d = 0; d < rank; ++d) perm.push_back(SymExpr(d));
  std::swap(perm[rank - 1], perm[rank - 2]);
  return perm;
}

class PatternBuilder {
 public:
  PatternBuilder(const Case& c) : c_(c), v_(pattern_variant(c.variant)), t_(c.dtype) {}

  Graph build() {
    const SymShape& batch = c_.batch;
    const SymExpr H(c_.q_heads), Hkv(c_.kv_heads), E(c_.head_dim), Ev(c_.value_dim);
    const SymExpr N = product(batch) * H;
    const int64_t rank = static_cast<int64_t>(batch.size()) + 3;
    const std::vector<double> lit = scale_literals(c_);

    ValueRef q = g_.placeholder("q", {t_, query_shape(c_)});
    ValueRef k = g_.placeholder("k", {t_, key_shape(c_)});
    ValueRef v = g_.placeholder("v", {t_, value_shape(c_)});
    std::optional<ValueRef> mask;
    if (c_.mask) {
      mask = g_.placeholder("attn_mask", {c_.mask->dtype, c_.mask->shape});
      if (c_.mask->dtype == DType::b8)  // true keeps a key: 0, false drops it: -inf
        mask = g_.call(kWhereScalar, {*mask, 0.0, -std::numeric_limits<double>::infinity()}, {},
                       {{t_, c_.mask->shape}}, "mask_additive");
    }

    // With enable_gqa and unequal heads the math decomposition repeats k and
    // v to Hq heads (repeat_interleave over dim -3, semantics llm-and-cuda.md
    // §3.4 item 4); the pattern's k and v placeholders bind the repeated
    // tensors. One node stands for the copies export lowers it to: they
    // run outside the pattern and compute exactly.
    const bool repeated = c_.enable_gqa && c_.kv_heads != c_.q_heads;
    if (repeated) {
      k = repeat_heads(k, key_shape(c_));
      v = repeat_heads(v, value_shape(c_));
    }
    const SymExpr Hk = repeated ? H : Hkv;
    const bool kv_broadcast = !repeated && c_.kv_heads != c_.q_heads;

    // q @ kᵀ, with the scale where the variant puts it.
    ValueRef qs = q;
    if (v_.site != ScaleSite::scores) qs = mul(q, lit[0]);
    if (v_.extra == PathOp::clone) qs = call(kClone, {qs}, query_shape(c_));
    if (v_.extra == PathOp::to_copy) qs = g_.call(kToCopy, {qs}, {{"dtype", t_}}, {{t_, query_shape(c_)}});
    ValueRef qv = view(expand(qs, query_shape(c_), false), with_tail({}, {N, c_.q_len, E}));

    const SymShape kt_shape = with_tail(batch, {Hk, E, c_.kv_len});
    ValueRef ks;
    if (v_.extra == PathOp::transpose) {
      ks = call(kPermuteCopy, {mul(k, lit[1]), last_two_swapped(rank)}, kt_shape);
    } else {
      ks = call(kPermuteCopy, {k, last_two_swapped(rank)}, kt_shape);
      if (v_.site == ScaleSite::q_and_k) ks = mul(ks, lit[1]);
    }
    ValueRef kv = view(expand(ks, with_tail(batch, {H, E, c_.kv_len}), kv_broadcast),
                       with_tail({}, {N, E, c_.kv_len}));
    ValueRef s = call(kBmm, {qv, kv}, with_tail({}, {N, c_.q_len, c_.kv_len}));
    s = view(s, score_shape(c_));
    if (v_.site == ScaleSite::scores) s = mul(s, lit[0]);
    if (mask) s = call(kAddTensor, {s, *mask}, score_shape(c_));
    ValueRef p = softmax(s);

    // P @ v.
    ValueRef pv = view(expand(p, score_shape(c_), false), with_tail({}, {N, c_.q_len, c_.kv_len}));
    ValueRef vv = view(expand(v, with_tail(batch, {H, c_.kv_len, Ev}), kv_broadcast),
                       with_tail({}, {N, c_.kv_len, Ev}));
    ValueRef o = call(kBmm, {pv, vv}, with_tail({}, {N, c_.q_len, Ev}));
    g_.outputs = {view(o, output_shape(c_))};
    return std::move(g_);
  }

 private:
  ValueRef call(const char* op, std::vector<Arg> args, SymShape shape) {
    return g_.call(op, std::move(args), {}, {{t_, std::move(shape)}});
  }
  // x of shape [..., Hkv, L, D] repeated to [..., Hq, L, D], each head
  // Hq / Hkv times in turn.
  ValueRef repeat_heads(ValueRef x, SymShape shape) {
    shape[shape.size() - 3] = SymExpr(c_.q_heads);
    return call("aten.repeat_interleave.self_int", {x, int64_t{c_.q_heads / c_.kv_heads}, int64_t{-3}}, shape);
  }
  ValueRef mul(ValueRef x, double literal) { return call(kMulScalar, {x, literal}, g_.info(x).shape); }
  // An expand_copy the decomposition emits before each bmm operand; a no-op
  // one is absent when the variant models RemoveNoopExpandCopyPass.
  ValueRef expand(ValueRef x, SymShape shape, bool broadcasts) {
    if (!v_.noop_expands && !broadcasts) return x;
    return call(kExpandCopy, {x, shape}, shape);
  }
  ValueRef view(ValueRef x, SymShape shape) { return call(kViewCopy, {x, shape}, shape); }
  // _safe_softmax over the keys, or its decomposition: softmax, then 0 in
  // every row whose scores are all -inf.
  ValueRef softmax(ValueRef s) {
    const SymShape shape = score_shape(c_);
    if (v_.softmax == SoftmaxForm::safe_softmax) return call(kSafeSoftmax, {s, int64_t{-1}}, shape);
    SymShape row = shape;
    row.back() = SymExpr(1);
    ValueRef p = g_.call(kSoftmax, {s, int64_t{-1}, false}, {}, {{t_, shape}});
    ValueRef masked = g_.call(kEqScalar, {s, -std::numeric_limits<double>::infinity()}, {}, {{DType::b8, shape}});
    ValueRef kept = g_.call(kLogicalNot, {masked}, {}, {{DType::b8, shape}});
    ValueRef any_kept = g_.call(kAnyDim, {kept, int64_t{-1}, true}, {}, {{DType::b8, row}});
    ValueRef all_masked = g_.call(kLogicalNot, {any_kept}, {}, {{DType::b8, row}});
    ValueRef zeros = g_.call(kFullLike, {p, 0.0}, {}, {{t_, shape}});
    return g_.call(kWhereSelf, {all_masked, zeros, p}, {}, {{t_, shape}});
  }

  const Case& c_;
  const PatternVariant& v_;
  const DType t_;
  Graph g_;
};

}  // namespace

Graph pattern_entry_graph(const Case& c) { return PatternBuilder(c).build(); }

}  // namespace sdpa::xnnpack
