// Models aten._scaled_dot_product_attention_math (PyTorch >= 2.5): upcast of
// f16/bf16 to f32, sqrt(scale) on q and on k^T, GQA by repeat_interleave,
// bool and causal masks to 0/-inf, top-left causal, _safe_softmax, dropout.
#include "backends/aten/math_decomposition.h"

#include <cmath>
#include <limits>

#include "backends/common/sdpa_entry.h"

namespace sdpa::aten {

Mutant parse_mutant(const std::string& name) {
  if (name == "drop-scale") return Mutant::drop_scale;
  if (name == "causal-bottom-right") return Mutant::causal_bottom_right;
  if (name == "gqa-modulo") return Mutant::gqa_modulo;
  if (name == "softmax-no-max") return Mutant::softmax_no_max;
  if (name == "matmul-bf16-output") return Mutant::matmul_bf16_output;
  return Mutant::none;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

SymShape with_last_two(SymShape s, const SymExpr& a, const SymExpr& b) {
  s[s.size() - 2] = a;
  s[s.size() - 1] = b;
  return s;
}

class Emitter {
 public:
  Emitter(Graph& g, Mutant m) : g_(g), mutant_(m) {}

  ValueRef decompose(const SdpaCall& call, DType out_dtype) {
    DType t = is_floating(out_dtype) && out_dtype != DType::f64 ? DType::f32 : out_dtype;
    ValueRef q = cast(call.q, t), k = cast(call.k, t), v = cast(call.v, t);
    const SymShape qs = g_.info(q).shape, ks = g_.info(k).shape;
    const SymExpr hq = qs[qs.size() - 3], hkv = ks[ks.size() - 3];
    if (call.enable_gqa && hq != hkv) {
      k = expand_heads(k, hq, hkv);
      v = expand_heads(v, hq, hkv);
    }
    const SymExpr e = qs.back();
    double scale = call.scale ? *call.scale : 1.0 / std::sqrt(static_cast<double>(e.constant()));
    double sf = std::sqrt(std::fabs(scale));
    SymShape kt_shape = with_last_two(g_.info(k).shape, e, ks[ks.size() - 2]);
    ValueRef kt = g_.call("aten.transpose.int", {k, int64_t{-2}, int64_t{-1}}, {}, {{t, kt_shape}});
    if (mutant_ != Mutant::drop_scale) {
      q = g_.call("aten.mul.Scalar", {q, scale < 0 ? -sf : sf}, {}, {{t, qs}});
      kt = g_.call("aten.mul.Scalar", {kt, sf}, {}, {{t, kt_shape}});
    }
    const SymExpr lq = qs[qs.size() - 2], lkv = ks[ks.size() - 2];
    SymShape score = with_last_two(qs, lq, lkv);
    ValueRef attn = g_.call("aten.matmul.default", {q, kt}, {}, {{t, score}});
    if (call.is_causal) attn = add_bool_mask(attn, causal_mask(lq, lkv), t, score);
    if (call.mask) {
      if (g_.info(*call.mask).dtype == DType::b8) attn = add_bool_mask(attn, *call.mask, t, score);
      else attn = g_.call("aten.add.Tensor", {attn, cast(*call.mask, t)}, {}, {{t, score}});
    }
    ValueRef p = g_.call("aten._safe_softmax.default", {attn, int64_t{-1}}, {}, {{t, score}});
    if (call.dropout_p > 0)
      p = g_.call("aten.native_dropout.default", {p, call.dropout_p, true}, {},
                  {{t, score}, {DType::b8, score}});
    SymShape out = with_last_two(score, lq, g_.info(v).shape.back());
    ValueRef o = g_.call("aten.matmul.default", {p, v}, {}, {{t, out}});
    return cast(o, out_dtype);
  }

 private:
  ValueRef cast(ValueRef x, DType t) {
    if (g_.info(x).dtype == t) return x;
    return g_.call("aten._to_copy.default", {x}, {{"dtype", t}}, {{t, g_.info(x).shape}});
  }

  // k, v: [..., Hkv, L, D] -> [..., Hq, L, D]. Upstream repeats each kv head
  // G times in place (head h reads h / G); the gqa-modulo mutant tiles (h % Hkv).
  ValueRef expand_heads(ValueRef x, const SymExpr& hq, const SymExpr& hkv) {
    SymShape s = g_.info(x).shape;
    int64_t group = hq.constant() / hkv.constant();
    s[s.size() - 3] = hq;
    if (mutant_ == Mutant::gqa_modulo) {
      SymShape reps(s.size(), SymExpr(1));
      reps[s.size() - 3] = group;
      return g_.call("aten.repeat.default", {x, reps}, {}, {{g_.info(x).dtype, s}});
    }
    return g_.call("aten.repeat_interleave.self_int", {x, group, int64_t{-3}}, {},
                   {{g_.info(x).dtype, s}});
  }

  // ones(L, S).tril(): top-left alignment. The causal-bottom-right mutant
  // shifts the diagonal by S - L, as FlashAttention-2 does.
  ValueRef causal_mask(const SymExpr& lq, const SymExpr& lkv) {
    SymShape s{lq, lkv};
    ValueRef ones = g_.call("aten.ones.default", {s}, {{"dtype", DType::b8}}, {{DType::b8, s}});
    Arg diagonal = mutant_ == Mutant::causal_bottom_right ? Arg(lkv - lq) : Arg(int64_t{0});
    return g_.call("aten.tril.default", {ones, diagonal}, {}, {{DType::b8, s}});
  }

  // convert_boolean_attn_mask: keep -> 0, drop -> -inf, then add.
  ValueRef add_bool_mask(ValueRef attn, ValueRef mask, DType t, const SymShape& score) {
    SymShape ms = g_.info(mask).shape;
    ValueRef drop = g_.call("aten.logical_not.default", {mask}, {}, {{DType::b8, ms}});
    ValueRef zeros = g_.call("aten.zeros_like.default", {mask}, {{"dtype", t}}, {{t, ms}});
    ValueRef additive = g_.call("aten.masked_fill.Scalar", {zeros, drop, -kInf}, {}, {{t, ms}});
    return g_.call("aten.add.Tensor", {attn, additive}, {}, {{t, score}});
  }

  Graph& g_;
  Mutant mutant_;
};

}  // namespace

Pass::Result MathDecompositionPass::run(const Graph& g, const ShapeEnv& env,
                                        const RewriteControl& control) const {
  Result result;
  GraphRewriter rw(g);
  for (const Node& n : g.nodes) {
    if (n.op != kSdpaOp) {
      rw.copy(n);
      continue;
    }
    // The math decomposition is PyTorch's reference: it takes every call
    // aten accepts, so its guard has one rule.
    GuardContext guard(env, "%" + n.name);
    guard.rule("aten-accepts", true, "every call aten accepts decomposes");
    Decision d = guard.finish();
    d.forced = !d.rewrite && control.rewrites(d);
    result.decisions.push_back(d);
    if (!control.rewrites(d)) {
      rw.copy(n);
      continue;
    }
    Emitter emit(rw.out(), mutant_);
    SdpaCall call = read_sdpa_call(n);
    call.q = rw.map(call.q);
    call.k = rw.map(call.k);
    call.v = rw.map(call.v);
    if (call.mask) call.mask = rw.map(*call.mask);
    rw.replace(n, {emit.decompose(call, n.outputs[0].dtype)});
  }
  result.graph = rw.finish();
  return result;
}

}  // namespace sdpa::aten
