#pragma once
/// MatmulToBmmPass (backends/cortex_m/passes/matmul_to_bmm_pass.py,
/// semantics/cortex-m-and-xnnpack.md §1.2): aten.matmul of two rank-3
/// tensors with equal batch becomes aten.bmm; of two equal-rank tensors of
/// rank > 3 with equal leading dims, reshape(lhs, [-1, m, k]),
/// reshape(rhs, [-1, k, n]), bmm, reshape(out, batch + [m, n]). Every other
/// matmul (rank 1 or 2, mixed ranks, broadcast batch dims) is left alone.
/// An ExportPass without a guard: it makes no decisions.
#include "harness/check/target.h"

namespace sdpa::cortex_m {

class MatmulToBmmPass : public Pass {
 public:
  std::string name() const override { return "matmul-to-bmm"; }
  using Pass::run;
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override;
};

}  // namespace sdpa::cortex_m
