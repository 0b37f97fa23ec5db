// Models ReplaceFusedSdpaWithSdpaPass as semantics/passes.md §2 describes it
// (the pass is not in ExecuTorch main, llm-and-cuda.md §4.1), including its
// visit of the branches of a cond.
#include "backends/cuda/replace_fused_sdpa_pass.h"

#include <memory>

#include "backends/common/sdpa_entry.h"
#include "backends/cuda/fused_entry.h"

namespace sdpa::cuda {

const std::vector<std::pair<FusedRule, std::string>>& fused_rules() {
  static const std::vector<std::pair<FusedRule, std::string>> rules = {
      {FusedRule::outputs_used, "outputs-used"},
      {FusedRule::causal_bias, "causal-bias"},
      {FusedRule::causal_lengths, "causal-lengths"}};
  return rules;
}

std::optional<FusedRule> parse_fused_rule(const std::string& name) {
  for (const auto& [rule, rule_name] : fused_rules())
    if (rule_name == name) return rule;
  return std::nullopt;
}

std::string replacement_name(const std::string& fused) { return fused + "_sdpa"; }

std::optional<ReplaceFault> parse_replace_fault(const std::string& name) {
  if (name == "none") return ReplaceFault::none;
  if (name == "replace-drops-scale") return ReplaceFault::drop_scale;
  if (name == "replace-drops-enable-gqa") return ReplaceFault::drop_enable_gqa;
  return std::nullopt;
}

namespace {

bool reads_extra(const Arg& a, int index) {
  const ValueRef* r = std::get_if<ValueRef>(&a);
  return r && r->node == index && r->output > 0;
}

const std::string& rule_name(FusedRule r) {
  for (const auto& entry : fused_rules())
    if (entry.first == r) return entry.second;
  static const std::string unknown = "?";
  return unknown;
}

SymExpr dim_from_end(const Graph& g, ValueRef x, size_t from_end) {
  const SymShape& s = g.info(x).shape;
  return s[s.size() - from_end];
}

}  // namespace

std::vector<int> readers_of_extra_outputs(const Graph& g, int index) {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    bool reads = false;
    for (const Arg& a : g.nodes[i].args) reads = reads || reads_extra(a, index);
    for (const auto& kw : g.nodes[i].kwargs) reads = reads || reads_extra(kw.second, index);
    if (reads) out.push_back(i);
  }
  for (const ValueRef& o : g.outputs)
    if (o.node == index && o.output > 0) out.push_back(-1);
  return out;
}

std::string branch_prefix(const std::string& where, const Node& cond, size_t branch) {
  return where + "%" + cond.name + (branch == 0 ? "/true_branch/" : "/false_branch/");
}

Decision ReplaceFusedSdpaWithSdpaPass::guard(const Graph& g, int index, const ShapeEnv& env,
                                             const std::string& where) const {
  const Node& n = g.nodes.at(index);
  GuardContext guard(env, where + "%" + n.name);
  auto rule = [&](FusedRule r, bool ok, const std::string& detail) {
    const bool weak = weakened_ == r;
    return guard.rule(rule_name(r), ok || weak, weak ? detail + " (rule weakened)" : detail);
  };
  const FusedCall call = read_fused_call(n);
  const std::vector<int> readers = readers_of_extra_outputs(g, index);
  std::string who = readers.empty() ? "only the attention output is read"
                    : readers[0] < 0 ? "the graph returns an output other than the attention output"
                                     : "%" + g.nodes[readers[0]].name + " reads an output other than the attention output";
  rule(FusedRule::outputs_used, readers.empty(), who);
  if (call.is_causal) {
    rule(FusedRule::causal_bias, !call.bias, call.bias ? "causal call with a bias" : "causal call without a bias");
    const SymExpr lq = dim_from_end(g, call.q, 2), lkv = dim_from_end(g, call.k, 2);
    rule(FusedRule::causal_lengths, guard.known(Fact{lq, Rel::eq, lkv}),
         "causal: Lq " + lq.str() + " == Lkv " + lkv.str() + " statically known");
  }
  return guard.finish();
}

Pass::Result ReplaceFusedSdpaWithSdpaPass::run(const Graph& g, const ShapeEnv& env,
                                               const RewriteControl& control) const {
  Result result;
  result.graph = rewrite(g, env, control, "", result.decisions);
  return result;
}

Graph ReplaceFusedSdpaWithSdpaPass::rewrite(const Graph& g, const ShapeEnv& env, const RewriteControl& control,
                                            const std::string& where, std::vector<Decision>& decisions) const {
  GraphRewriter rw(g);
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& n = g.nodes[i];
    if (!is_fused_op(n.op)) {
      rw.copy(n);
      Node& copied = rw.out().nodes.back();
      for (size_t b = 0; b < n.subgraphs.size(); ++b)
        copied.subgraphs[b] =
            std::make_shared<Graph>(rewrite(*n.subgraphs[b], env, control, branch_prefix(where, n, b), decisions));
      continue;
    }
    Decision d = guard(g, i, env, where);
    d.forced = !d.rewrite && control.rewrites(d);
    decisions.push_back(d);
    if (!control.rewrites(d)) {
      rw.copy(n);
      continue;
    }
    const FusedCall call = read_fused_call(n);
    std::vector<std::pair<std::string, Arg>> kwargs;
    // A scale of None stays out.
    if (call.scale && fault_ != ReplaceFault::drop_scale) kwargs.emplace_back("scale", *call.scale);
    // The fused variants group key heads as GQA does; only statically equal counts go without.
    const SymExpr hq = dim_from_end(g, call.q, 3), hkv = dim_from_end(g, call.k, 3);
    if (!env.statically_known(Fact{hq, Rel::eq, hkv}) && fault_ != ReplaceFault::drop_enable_gqa)
      kwargs.emplace_back("enable_gqa", true);
    std::vector<Arg> args{rw.map(call.q), rw.map(call.k), rw.map(call.v),
                          call.bias ? Arg(rw.map(*call.bias)) : Arg(None{}), call.dropout_p, call.is_causal};
    ValueRef out = rw.out().call(kSdpaOp, args, kwargs, {n.outputs[0]}, replacement_name(n.name));
    // Every use of the fused node now reads the SDPA output, as FX's
    // replace_all_uses_with does: only sound when output 0 alone is read.
    rw.replace(n, std::vector<ValueRef>(n.outputs.size(), out));
  }
  return rw.finish();
}

}  // namespace sdpa::cuda
