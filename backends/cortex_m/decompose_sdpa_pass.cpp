// Models the SDPA decomposition of the Cortex-M transform_for_annotation
// pipeline (semantics/passes.md §1) and, as policy shared-decomp, runs the
// model of the generic backends/transforms/decompose_sdpa.py on every node.
#include "backends/cortex_m/decompose_sdpa_pass.h"

#include <cmath>
#include <stdexcept>

#include "backends/common/sdpa_entry.h"
#include "harness/io/json_reader.h"

namespace sdpa::cortex_m {

std::optional<Policy> parse_policy(const std::string& name) {
  if (name == "none") return Policy::none;
  if (name == "decompose") return Policy::decompose;
  if (name == "decompose+fold") return Policy::decompose_fold;
  if (name == "shared-decomp") return Policy::shared_decomp;
  return std::nullopt;
}

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::none: return "none";
    case Policy::decompose: return "decompose";
    case Policy::decompose_fold: return "decompose+fold";
    case Policy::shared_decomp: return "shared-decomp";
  }
  return "?";
}

const std::vector<std::pair<GuardRule, std::string>>& guard_rules() {
  static const std::vector<std::pair<GuardRule, std::string>> rules = {
      {GuardRule::float32, "float32"},       {GuardRule::no_mask, "no-mask"},
      {GuardRule::not_causal, "not-causal"}, {GuardRule::no_dropout, "no-dropout"},
      {GuardRule::equal_heads, "equal-heads"}, {GuardRule::static_shapes, "static-shapes"},
      {GuardRule::rank, "rank"},             {GuardRule::leading_dims, "leading-dims"}};
  return rules;
}

std::optional<GuardRule> parse_guard_rule(const std::string& name) {
  if (name == "none") return std::nullopt;
  for (const auto& [rule, n] : guard_rules())
    if (n == name) return rule;
  throw InputError("weaken: '" + name + "' is not a rule of DecomposeSDPAPass's guard");
}

namespace {

const std::string& rule_name(GuardRule r) {
  for (const auto& [rule, n] : guard_rules())
    if (rule == r) return n;
  throw std::logic_error("unnamed guard rule");
}

bool static_non_empty(const SymShape& s) {
  for (const auto& d : s)
    if (!d.is_constant() || d.constant() < 1) return false;
  return true;
}

SymShape leading(const SymShape& s, size_t keep_last) {
  return s.size() > keep_last ? SymShape(s.begin(), s.end() - keep_last) : SymShape{};
}

SymShape with_last_two(SymShape s, const SymExpr& a, const SymExpr& b) {
  s[s.size() - 2] = a;
  s.back() = b;
  return s;
}

// Emits the decompose policy's form of one call into graph `g` (q, k, v
// already mapped into it): matmul(q, kᵀ), one MUL by scale, softmax, matmul.
ValueRef emit_decompose(Graph& g, const SdpaCall& call) {
  const SymShape qs = g.info(call.q).shape, ks = g.info(call.k).shape;
  const DType t = g.info(call.q).dtype;
  const SymExpr lq = qs[qs.size() - 2], lkv = ks[ks.size() - 2], e = qs.back();
  const double scale = call.scale ? *call.scale : 1.0 / std::sqrt(static_cast<double>(e.constant()));
  const SymShape kt_shape = with_last_two(ks, e, lkv);
  const SymShape score = with_last_two(qs, lq, lkv);
  const ValueRef kt = g.call("aten.transpose.int", {call.k, int64_t{-2}, int64_t{-1}}, {}, {{t, kt_shape}});
  ValueRef attn = g.call("aten.matmul.default", {call.q, kt}, {}, {{t, score}});
  attn = g.call("aten.mul.Scalar", {attn, scale}, {}, {{t, score}});
  const ValueRef p = g.call("aten._softmax.default", {attn, int64_t{-1}, false}, {}, {{t, score}});
  const SymShape out = with_last_two(score, lq, g.info(call.v).shape.back());
  return g.call("aten.matmul.default", {p, call.v}, {}, {{t, out}});
}

}  // namespace

Decision DecomposeSdpaPass::guard(const Graph& g, int index, const ShapeEnv& env) const {
  const Node& n = g.nodes.at(index);
  const SdpaCall call = read_sdpa_call(n);
  const ValueInfo &q = g.info(call.q), &k = g.info(call.k), &v = g.info(call.v);
  GuardContext guard(env, "%" + n.name);
  if (policy_ == Policy::shared_decomp) {
    // DecomposeScaledDotProductAttention has no eligibility guard.
    guard.rule("sdpa-node", true, "the shared transform decomposes every aten SDPA node or raises");
    return guard.finish();
  }
  auto rule = [&](GuardRule r, bool passed, const std::string& detail) {
    const bool weak = weakened_ && *weakened_ == r;
    return guard.rule(rule_name(r), passed || weak, detail + (weak && !passed ? " (rule weakened)" : ""));
  };
  rule(GuardRule::float32, q.dtype == DType::f32 && k.dtype == DType::f32 && v.dtype == DType::f32,
       std::string("q, k, v are ") + dtype_name(q.dtype) + ", " + dtype_name(k.dtype) + ", " + dtype_name(v.dtype));
  rule(GuardRule::no_mask, !call.mask, call.mask ? "attn_mask given" : "no attn_mask");
  rule(GuardRule::not_causal, !call.is_causal, call.is_causal ? "is_causal=True" : "is_causal=False");
  rule(GuardRule::no_dropout, call.dropout_p == 0.0, "dropout_p=" + std::to_string(call.dropout_p));
  const bool ranked = q.shape.size() >= 3 && k.shape.size() >= 3 && v.shape.size() >= 3;
  const SymExpr hq = ranked ? q.shape[q.shape.size() - 3] : SymExpr(1);
  const SymExpr hkv = ranked ? k.shape[k.shape.size() - 3] : SymExpr(1);
  rule(GuardRule::equal_heads, guard.known(Fact{hq, Rel::eq, hkv}) && !call.enable_gqa,
       "Hq " + hq.str() + ", Hkv " + hkv.str() + (call.enable_gqa ? ", enable_gqa=True" : ""));
  rule(GuardRule::static_shapes, static_non_empty(q.shape) && static_non_empty(k.shape) && static_non_empty(v.shape),
       "q" + shape_str(q.shape) + " k" + shape_str(k.shape) + " v" + shape_str(v.shape));
  rule(GuardRule::rank, ranked && q.shape.size() == k.shape.size() && k.shape.size() == v.shape.size(),
       "ranks " + std::to_string(q.shape.size()) + ", " + std::to_string(k.shape.size()) + ", " +
           std::to_string(v.shape.size()));
  rule(GuardRule::leading_dims, leading(q.shape, 3) == leading(k.shape, 3) && leading(k.shape, 3) == leading(v.shape, 3),
       "leading dims " + shape_str(leading(q.shape, 3)) + ", " + shape_str(leading(k.shape, 3)) + ", " +
           shape_str(leading(v.shape, 3)));
  return guard.finish();
}

Pass::Result DecomposeSdpaPass::run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const {
  Result result;
  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op != kSdpaOp || policy_ == Policy::none) {
      rw.copy(n);
      continue;
    }
    Decision d = guard(g, static_cast<int>(i), env);
    d.forced = !d.rewrite && control.rewrites(d);
    result.decisions.push_back(d);
    // A forced call of rank < 2 or without a static head dim cannot be written down.
    const SdpaCall call0 = read_sdpa_call(n);
    const SymShape& qs = g.info(call0.q).shape;
    if (!control.rewrites(d) || qs.size() < 2 || !qs.back().is_constant()) {
      rw.copy(n);
      continue;
    }
    if (policy_ == Policy::shared_decomp) {
      SdpaCall call = canonicalize_shared_call(n);
      call.q = rw.map(call.q);
      call.k = rw.map(call.k);
      call.v = rw.map(call.v);
      if (call.mask) call.mask = rw.map(*call.mask);
      rw.replace(n, {emit_shared_decomposition(rw.out(), call, mutant_)});
      continue;
    }
    SdpaCall call = call0;
    call.q = rw.map(call.q);
    call.k = rw.map(call.k);
    call.v = rw.map(call.v);
    rw.replace(n, {emit_decompose(rw.out(), call)});
  }
  result.graph = rw.finish();
  return result;
}

}  // namespace sdpa::cortex_m
