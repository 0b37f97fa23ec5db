// Models ReplaceEdgeOpWithTritonOpPass (ExecuTorch backends/cuda/triton/
// replacement_pass.py, semantics/llm-and-cuda.md §4.2): no guard for SDPA,
// every node replaced by the op _pick_sdpa_kernel names, args and kwargs
// carried over, meta copied; an exception while replacing is logged ("Failed
// to replace node …") and the node stays. It walks graph_module.graph.nodes
// only: an SDPA inside a cond branch is not routed and runs on the math path.
#include "backends/cuda/triton/triton_routing_pass.h"

#include "backends/common/sdpa_entry.h"
#include "backends/cuda/triton/triton_common.h"
#include "backends/cuda/triton/triton_sdpa_kernel.h"
#include "backends/cuda/triton/triton_splitk_kernel.h"

namespace sdpa::cuda_triton {

bool picks_splitk(const SymExpr& Lq, const SymExpr& Lkv, const SymExpr& D) {
  // isinstance(L_q, int) and L_q == 1 and isinstance(L_kv, int) and L_kv >= 256
  // and D > 0 and (D & (D - 1)) == 0. A symbolic D is taken as not picking split-K.
  return Lq.is_constant() && Lq.constant() == 1 && Lkv.is_constant() &&
         Lkv.constant() >= kSplitKLkvThreshold && D.is_constant() && is_power_of_2(D.constant());
}

namespace {

std::string sizes(const SymExpr& Lq, const SymExpr& Lkv, const SymExpr& D) {
  return "L_q " + Lq.str() + ", L_kv " + Lkv.str() + ", D " + D.str();
}

// The Triton call's arguments: aten's positional args verbatim, then its
// keyword scale and enable_gqa at the positions the Triton schema gives them.
std::vector<Arg> triton_args(GraphRewriter& rw, const Node& n) {
  static const std::vector<Arg> defaults{None{}, None{}, None{}, None{}, 0.0, false};
  std::vector<Arg> args;
  for (const Arg& a : n.args) args.push_back(rw.map(a));
  for (size_t i = args.size(); i < defaults.size(); ++i) args.push_back(defaults[i]);
  const Arg* scale = n.kwarg("scale");
  const Arg* gqa = n.kwarg("enable_gqa");
  // aten's scale=None is the Triton default 0.0, which the op reads as 1/sqrt(D).
  args.push_back(scale && !std::holds_alternative<None>(*scale) ? *scale : Arg(0.0));
  args.push_back(gqa && !std::holds_alternative<None>(*gqa) ? *gqa : Arg(false));
  return args;
}

class Router {
 public:
  Router(const ShapeEnv& env, const RewriteControl& control, SdpaTree tree)
      : env_(env), control_(control), tree_(tree) {}

  Pass::Result run(const Graph& g) {
    GraphRewriter rw(g);
    Pass::Result result;
    for (const Node& n : g.nodes) {
      if (n.op != kSdpaOp) {
        rw.copy(n);
        continue;
      }
      Decision d = decide(g, n);
      result.decisions.push_back(d);
      if (!control_.rewrites(d) || !d.rewrite) {
        rw.copy(n);
        continue;
      }
      const char* op = d.deciding_rule == kRouteSplitK ? kTritonSplitKOp : kTritonSdpaOp;
      rw.replace(n, {rw.out().call(op, triton_args(rw, n), {}, n.outputs, short_op_name(op))});
    }
    result.graph = rw.finish();
    return result;
  }

 private:
  Decision decide(const Graph& g, const Node& n) const {
    GuardContext guard(env_, "%" + n.name);
    if (tree_ == SdpaTree::dec_2025) {  // no _pick_sdpa_kernel: no size is read
      guard.rule(kRouteStandard, true, "every edge SDPA to triton.sdpa (executorch 2025-12-17)");
      Decision d = guard.finish();
      d.deciding_rule = kRouteStandard;
      return d;
    }
    const SymShape& q = g.info(std::get<ValueRef>(n.args.at(0))).shape;
    const SymShape& k = g.info(std::get<ValueRef>(n.args.at(1))).shape;
    // L_q, D = q_shape[2], q_shape[3]; L_kv = k_shape[2]: an IndexError on a
    // lower rank is caught by the pass, which logs it and keeps the node.
    if (q.size() < 4 || k.size() < 3) {
      guard.rule("failed-to-replace", false,
                 "Failed to replace node " + n.name + ": IndexError: tuple index out of range");
      return guard.finish();
    }
    const bool splitk = picks_splitk(q[2], k[2], q[3]);
    const char* route = splitk ? kRouteSplitK : kRouteStandard;
    guard.rule(route, true, sizes(q[2], k[2], q[3]));
    Decision d = guard.finish();
    d.deciding_rule = route;
    return d;
  }

  const ShapeEnv& env_;
  const RewriteControl& control_;
  SdpaTree tree_;
};

}  // namespace

Pass::Result ReplaceEdgeOpWithTritonOpPass::run(const Graph& g, const ShapeEnv& env,
                                                const RewriteControl& control) const {
  return Router(env, control, tree_).run(g);
}

}  // namespace sdpa::cuda_triton
