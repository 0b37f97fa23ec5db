// Models MatmulToBmmPass.call_operator (executorch #21028), semantics/
// cortex-m-and-xnnpack.md §1.2: only aten.matmul.default is touched.
#include "backends/cortex_m/matmul_to_bmm_pass.h"

namespace sdpa::cortex_m {
namespace {

constexpr const char* kMatmul = "aten.matmul.default";
constexpr const char* kBmm = "aten.bmm.default";
constexpr const char* kReshape = "aten.reshape.default";

SymShape batch_of(const SymShape& s) { return SymShape(s.begin(), s.end() - 2); }

}  // namespace

Pass::Result MatmulToBmmPass::run(const Graph& g, const ShapeEnv&, const RewriteControl&) const {
  Result result;
  GraphRewriter rw(g);
  for (const Node& n : g.nodes) {
    if (n.op != kMatmul || n.args.size() < 2 || !std::holds_alternative<ValueRef>(n.args[0]) ||
        !std::holds_alternative<ValueRef>(n.args[1])) {
      rw.copy(n);
      continue;
    }
    const ValueInfo& lhs = g.info(std::get<ValueRef>(n.args[0]));
    const ValueInfo& rhs = g.info(std::get<ValueRef>(n.args[1]));
    const size_t rank = lhs.shape.size();
    const bool same_batch = rank >= 3 && rhs.shape.size() == rank && batch_of(lhs.shape) == batch_of(rhs.shape);
    if (!same_batch) {
      rw.copy(n);
      continue;
    }
    Graph& out = rw.out();
    const ValueRef l = rw.map(std::get<ValueRef>(n.args[0])), r = rw.map(std::get<ValueRef>(n.args[1]));
    const ValueInfo& o = n.outputs.at(0);
    if (rank == 3) {
      rw.replace(n, {out.call(kBmm, {l, r}, {}, {o}, "bmm")});
      continue;
    }
    const SymExpr m = lhs.shape[rank - 2], k = lhs.shape[rank - 1], nn = rhs.shape[rank - 1];
    SymExpr flat(1);
    for (const auto& d : batch_of(lhs.shape)) flat = flat * d;
    const ValueRef l3 = out.call(kReshape, {l, SymShape{-1, m, k}}, {}, {{lhs.dtype, {flat, m, k}}});
    const ValueRef r3 = out.call(kReshape, {r, SymShape{-1, k, nn}}, {}, {{rhs.dtype, {flat, k, nn}}});
    const ValueRef b = out.call(kBmm, {l3, r3}, {}, {{o.dtype, {flat, m, nn}}}, "bmm");
    SymShape back = batch_of(lhs.shape);
    back.push_back(m);
    back.push_back(nn);
    rw.replace(n, {out.call(kReshape, {b, back}, {}, {o})});
  }
  result.graph = rw.finish();
  return result;
}

}  // namespace sdpa::cortex_m
