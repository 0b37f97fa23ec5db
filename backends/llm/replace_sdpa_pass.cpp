// Models ReplaceSDPAWithCustomSDPAPass (executorch main cff6f4dd32,
// extension/llm/export/export_passes.py) as policy `upstream`, and the
// intended design of semantics/passes.md §3 as policy `contract`.
#include "backends/llm/replace_sdpa_pass.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "backends/llm/custom_sdpa_kernel.h"
#include "backends/llm/custom_sdpa_meta.h"

namespace sdpa::llm {

const std::vector<std::pair<ContractRule, std::string>>& contract_rules() {
  static const std::vector<std::pair<ContractRule, std::string>> rules = {
      {ContractRule::rank, "rank"},
      {ContractRule::dtype, "dtype"},
      {ContractRule::heads, "heads"},
      {ContractRule::head_dims, "head-dims"},
      {ContractRule::dropout, "dropout"},
      {ContractRule::query_length, "query-length"},
      {ContractRule::causal_lengths, "causal-lengths"},
      {ContractRule::causal_scale, "causal-scale"},
      {ContractRule::unmasked_lengths, "unmasked-lengths"},
      {ContractRule::mask_shape, "mask-shape"},
      {ContractRule::mask_dtype, "mask-dtype"},
      {ContractRule::static_facts, "static-facts"},
      {ContractRule::assume_causal_first, "assume-causal-first"}};
  return rules;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string rule_name(ContractRule r) {
  for (const auto& [rule, name] : contract_rules())
    if (rule == r) return name;
  return "?";
}

SymShape swap12(SymShape s) {
  if (s.size() >= 3) std::swap(s[1], s[2]);
  return s;
}

// Emits the nodes both policies share.
class Emitter {
 public:
  explicit Emitter(Graph& g) : g_(g) {}

  // aten.transpose.int(x, 1, 2) then aten.contiguous.default. A rank < 3
  // input makes transpose raise, as it does upstream before any check:
  // maybe_wrap_dim checks dim 1, then dim 2, against rank max(r, 1).
  ValueRef swap_seq_and_heads(ValueRef x, const std::string& name) {
    const ValueInfo& in = g_.info(x);
    if (in.shape.size() < 3) {
      const int64_t r = std::max<int64_t>(1, static_cast<int64_t>(in.shape.size()));
      throw std::runtime_error("IndexError: Dimension out of range (expected to be in range of [-" +
                               std::to_string(r) + ", " + std::to_string(r - 1) + "], but got " +
                               std::to_string(r == 1 ? 1 : 2) + ")");
    }
    ValueInfo out{in.dtype, swap12(in.shape)};
    ValueRef t = g_.call("aten.transpose.int", {x, int64_t{1}, int64_t{2}}, {}, {out}, name);
    return g_.call("aten.contiguous.default", {t}, {}, {out}, name + "_contiguous");
  }

  // aten.squeeze.dims over every leading dim: [1, ..., 1, Lq, Lkv] -> [Lq, Lkv].
  // The guard took the leading dims as 1 (the contract for every size, the
  // upstream pass on the hints); a size that is not 1 at run time is left
  // by squeeze, and the interpreter reports the shape the node declared.
  ValueRef squeeze_leading(ValueRef mask) {
    const ValueInfo& in = g_.info(mask);
    SymShape dims;
    for (size_t d = 0; d + 2 < in.shape.size(); ++d) dims.push_back(static_cast<int64_t>(d));
    SymShape out(in.shape.end() - 2, in.shape.end());
    return g_.call("aten.squeeze.dims", {mask, dims}, {}, {{in.dtype, out}});
  }

  // aten.where.Scalar(mask, 0.0, -inf): keep -> 0, drop -> -inf, f32.
  ValueRef bool_to_additive(ValueRef mask) {
    return g_.call("aten.where.Scalar", {mask, 0.0, -kInf}, {}, {{DType::f32, g_.info(mask).shape}});
  }

  ValueRef to_f32(ValueRef x) {
    return g_.call("aten._to_copy.default", {x}, {{"dtype", DType::f32}}, {{DType::f32, g_.info(x).shape}});
  }

  // llama.custom_sdpa(q, k, v, start_pos=0, mask, dropout, is_causal, scale),
  // then back to [B, H, L, D]. The output is empty_like(query) (Meta kernel).
  ValueRef custom_sdpa(ValueRef q, ValueRef k, ValueRef v, std::optional<ValueRef> mask,
                       const SdpaCall& call, bool is_causal) {
    std::vector<Arg> args{q, k, v, int64_t{0}, mask ? Arg(*mask) : Arg(None{}), call.dropout_p,
                          is_causal, call.scale ? Arg(*call.scale) : Arg(None{})};
    ValueRef out = g_.call(kCustomSdpaOp, args, {}, {g_.info(q)}, "custom_sdpa");
    return swap_seq_and_heads(out, "output");
  }

  Graph& g_;
};

class Rewriter {
 public:
  Rewriter(const PassConfig& cfg, const ReplaceSdpaWithCustomSdpaPass& pass, const ShapeEnv& env,
           const RewriteControl& control)
      : cfg_(cfg), pass_(pass), env_(env), control_(control) {}

  Pass::Result run(const Graph& g) {
    GraphRewriter rw(g);
    Pass::Result result;
    for (const Node& n : g.nodes) {
      if (n.op != kSdpaOp) {
        rw.copy(n);
        continue;
      }
      // Upstream's _extract_args reads positions only (§2.1 item 1); the
      // contract binds the call as aten does.
      SdpaCall call = cfg_.policy == GuardPolicy::upstream ? read_sdpa_call(n) : read_sdpa_call_bound(n);
      SdpaCall mapped = call;
      mapped.q = rw.map(call.q);
      mapped.k = rw.map(call.k);
      mapped.v = rw.map(call.v);
      if (call.mask) mapped.mask = rw.map(*call.mask);
      std::optional<ValueRef> out = cfg_.policy == GuardPolicy::upstream
                                        ? upstream(rw.out(), n, mapped, result)
                                        : contract(g, rw.out(), n, mapped, result);
      if (out) rw.replace(n, {*out});
      else rw.copy(n);
    }
    result.graph = rw.finish();
    return result;
  }

 private:
  // export_passes.py: transposes first, then the rank check, then the mask.
  std::optional<ValueRef> upstream(Graph& out, const Node& n, const SdpaCall& call, Pass::Result& result) {
    Emitter emit(out);
    GuardContext guard(env_, "%" + n.name);
    ValueRef q = emit.swap_seq_and_heads(call.q, "q_bshd");
    ValueRef k = emit.swap_seq_and_heads(call.k, "k_bshd");
    ValueRef v = emit.swap_seq_and_heads(call.v, "v_bshd");
    bool rank4 = out.info(call.q).shape.size() == 4 && out.info(call.k).shape.size() == 4 &&
                 out.info(call.v).shape.size() == 4;
    guard.rule("rank", rank4, rank4 ? "" : "ReplaceSDPAWithCustomSDPAPass only supports 4D QKV inputs.");
    std::optional<ValueRef> mask = call.mask;
    bool is_causal = call.is_causal;
    if (cfg_.assume_causal_mask) mask.reset(), is_causal = true;
    if (rank4 && mask && !squeezable_on_hints(out.info(*mask), guard)) {
      guard.rule("mask-rank", false, "ReplaceSDPAWithCustomSDPAPass only supports 2D attention mask.");
    }
    Decision d = guard.finish();
    d.forced = !d.rewrite && control_.rewrites(d);
    result.decisions.push_back(d);
    if (!control_.rewrites(d)) return std::nullopt;  // the transposes stay, dead
    if (mask) {
      bool was_bool = out.info(*mask).dtype == DType::b8;
      if (out.info(*mask).shape.size() > 2) mask = emit.squeeze_leading(*mask);
      if (was_bool) mask = emit.bool_to_additive(*mask);
    }
    meta_check_qkv(out, q, k, v, env_, cfg_.revision);
    if (mask) meta_check_mask(out.info(*mask));
    return emit.custom_sdpa(q, k, v, mask, call, is_causal);
  }

  // "All leading dims are 1", asked of fake tensors: a symbolic size is
  // compared on its hint (recorded as an assumption); an unbacked one raises.
  bool squeezable_on_hints(const ValueInfo& mask, GuardContext& guard) {
    for (size_t d = 0; d + 2 < mask.shape.size(); ++d) {
      const SymExpr& size = mask.shape[d];
      Fact one{size, Rel::eq, SymExpr(1)};
      if (!size.is_constant() && !env_.on_hint(one))
        throw std::runtime_error("GuardOnDataDependentSymNode: Could not guard on data-dependent "
                                 "expression Eq(" + size.str() + ", 1)");
      if (!guard.on_hint(one, "mask-rank")) return false;
    }
    return true;
  }

  std::optional<ValueRef> contract(const Graph& source, Graph& out, const Node& n,
                                   const SdpaCall& call, Pass::Result& result) {
    Decision d = pass_.contract_guard(source, n, env_);
    d.forced = !d.rewrite && control_.rewrites(d);
    result.decisions.push_back(d);
    if (!control_.rewrites(d)) return std::nullopt;
    Emitter emit(out);
    std::optional<ValueRef> mask = call.mask;
    bool is_causal = call.is_causal;
    if (cfg_.assume_causal_mask) mask.reset(), is_causal = true;
    if (mask) {
      if (out.info(*mask).shape.size() > 2) mask = emit.squeeze_leading(*mask);
      DType t = out.info(*mask).dtype;
      if (cfg_.weakened != ContractRule::mask_dtype) {
        if (t == DType::b8) mask = emit.bool_to_additive(*mask);
        else if (t == DType::f16 || t == DType::bf16) mask = emit.to_f32(*mask);
      }
    }
    ValueRef q = emit.swap_seq_and_heads(call.q, "q_bshd");
    ValueRef k = emit.swap_seq_and_heads(call.k, "k_bshd");
    ValueRef v = emit.swap_seq_and_heads(call.v, "v_bshd");
    meta_check_qkv(out, q, k, v, env_, cfg_.revision);
    if (mask) meta_check_mask(out.info(*mask));
    return emit.custom_sdpa(q, k, v, mask, call, is_causal);
  }

  const PassConfig& cfg_;
  const ReplaceSdpaWithCustomSdpaPass& pass_;
  const ShapeEnv& env_;
  const RewriteControl& control_;
};

}  // namespace

Decision ReplaceSdpaWithCustomSdpaPass::contract_guard(const Graph& g, const Node& n,
                                                      const ShapeEnv& env) const {
  GuardContext guard(env, "%" + n.name);
  const SdpaCall call = read_sdpa_call_bound(n);
  const ValueInfo &q = g.info(call.q), &k = g.info(call.k), &v = g.info(call.v);
  auto weak = [&](ContractRule r) { return config_.weakened == r; };
  auto rule = [&](ContractRule r, bool ok, const std::string& detail) {
    return guard.rule(rule_name(r), ok || weak(r), weak(r) ? detail + " (rule weakened)" : detail);
  };
  // A size fact: statically known, or (static-facts weakened) true on the hints.
  auto fact = [&](const SymExpr& a, Rel rel, const SymExpr& b, ContractRule r) {
    Fact f{a, rel, b};
    return weak(ContractRule::static_facts) ? guard.on_hint(f, rule_name(r)) : guard.known(f);
  };
  std::optional<ValueRef> mask = call.mask;
  bool is_causal = call.is_causal;
  if (config_.assume_causal_mask && !weak(ContractRule::assume_causal_first)) mask.reset(), is_causal = true;

  const bool rank4 = q.shape.size() == 4 && k.shape.size() == 4 && v.shape.size() == 4;
  rule(ContractRule::rank, rank4, "q, k, v ranks " + std::to_string(q.shape.size()) + ", " +
                                      std::to_string(k.shape.size()) + ", " + std::to_string(v.shape.size()));
  // The rules below read the head and length dims at -3 and -2.
  if (q.shape.size() < 3 || k.shape.size() < 3 || v.shape.size() < 3) return guard.finish();
  // Before 411a01e1b9 custom_sdpa took float32 only.
  const bool kernel_dtype = q.dtype == DType::f32 ||
                            (!config_.revision.float_only && (q.dtype == DType::f16 || q.dtype == DType::bf16));
  rule(ContractRule::dtype, kernel_dtype, std::string("dtype ") + dtype_name(q.dtype));
  const SymExpr hq = q.shape[q.shape.size() - 3], hkv = k.shape[k.shape.size() - 3];
  const bool heads = hq == hkv || hkv == SymExpr(1) ||
                     (call.enable_gqa && hq.is_constant() && hkv.is_constant() &&
                      hq.constant() % hkv.constant() == 0);
  rule(ContractRule::heads, heads, "Hq " + hq.str() + ", Hkv " + hkv.str());
  rule(ContractRule::head_dims, q.shape.back() == v.shape.back(),
       "E " + q.shape.back().str() + ", Ev " + v.shape.back().str());
  rule(ContractRule::dropout, call.dropout_p == 0.0, "dropout_p " + std::to_string(call.dropout_p));
  const SymExpr lq = q.shape[q.shape.size() - 2], lkv = k.shape[k.shape.size() - 2];
  rule(ContractRule::query_length, fact(lq, Rel::ge, SymExpr(1), ContractRule::query_length),
       "Lq " + lq.str() + " >= 1");
  if (is_causal) {
    // Self-test: mis-evaluated as Lq <= Lkv + 1 (off by one).
    const SymExpr bound = config_.misevaluated == ContractRule::causal_lengths ? lkv + SymExpr(1) : lkv;
    rule(ContractRule::causal_lengths, fact(lq, Rel::le, bound, ContractRule::causal_lengths),
         "Lq " + lq.str() + " <= Lkv " + lkv.str());
    rule(ContractRule::causal_scale, !call.scale || *call.scale > 0,
         call.scale ? "scale " + std::to_string(*call.scale) : "default scale");
  } else if (!mask) {
    // Self-test: mis-evaluated as Lq <= Lkv.
    const Rel rel = config_.misevaluated == ContractRule::unmasked_lengths ? Rel::le : Rel::eq;
    rule(ContractRule::unmasked_lengths, fact(lq, rel, lkv, ContractRule::unmasked_lengths),
         "Lq " + lq.str() + " == Lkv " + lkv.str());
  }
  if (mask) {
    const ValueInfo& m = g.info(*mask);
    bool shape_ok = m.shape.size() >= 2;
    for (size_t d = 0; shape_ok && d + 2 < m.shape.size(); ++d)
      shape_ok = fact(m.shape[d], Rel::eq, SymExpr(1), ContractRule::mask_shape);
    shape_ok = shape_ok && fact(m.shape[m.shape.size() - 2], Rel::eq, lq, ContractRule::mask_shape) &&
               fact(m.shape.back(), Rel::eq, lkv, ContractRule::mask_shape);
    rule(ContractRule::mask_shape, shape_ok, "mask " + shape_str(m.shape) + " vs [" + lq.str() + ", " + lkv.str() + "]");
    rule(ContractRule::mask_dtype,
         m.dtype == DType::b8 || m.dtype == DType::f32 || m.dtype == DType::f16 || m.dtype == DType::bf16,
         std::string("mask dtype ") + dtype_name(m.dtype));
  }
  return guard.finish();
}

Pass::Result ReplaceSdpaWithCustomSdpaPass::run(const Graph& g, const ShapeEnv& env,
                                                const RewriteControl& control) const {
  return Rewriter(config_, *this, env, control).run(g);
}

}  // namespace sdpa::llm
