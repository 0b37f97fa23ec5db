#pragma once
/// ReplaceEdgeOpWithTritonOpPass (ExecuTorch backends/cuda/triton/
/// replacement_pass.py at executorch main cff6f4dd32), semantics/
/// llm-and-cuda.md §4.2: every aten SDPA node becomes a Triton SDPA op.
#include <string>

#include "backends/cuda/triton/triton_sdpa_kernel.h"
#include "harness/check/target.h"

namespace sdpa::cuda_triton {

/// The two kernels _pick_sdpa_kernel chooses between, as the deciding rule
/// of each Decision.
inline constexpr const char* kRouteSplitK = "splitk";
inline constexpr const char* kRouteStandard = "standard";

/// _pick_sdpa_kernel on a node's static sizes: split-K iff L_q is the
/// integer 1, L_kv an integer >= 256 and D > 0 an integer power of two.
/// Symbolic sizes never pick split-K. Mask and is_causal are not read.
bool picks_splitk(const SymExpr& Lq, const SymExpr& Lkv, const SymExpr& D);

/// No guard: every node is rewritten (the routing never refuses). The new
/// node carries the aten node's args verbatim and its keyword arguments at
/// the positions the Triton schema binds them to (scale at 6, 0.0 when
/// absent, which the Triton op reads as 1/sqrt(D); enable_gqa at 7), and
/// the aten node's output metadata. At executorch 2025-12-17 (the pass at
/// stored pytorch/executorch f74026a6, beside sdpa.py at 7739119) there is
/// no _pick_sdpa_kernel: every node becomes triton.sdpa, whatever its rank.
class ReplaceEdgeOpWithTritonOpPass : public Pass {
 public:
  explicit ReplaceEdgeOpWithTritonOpPass(SdpaTree tree = SdpaTree::main) : tree_(tree) {}
  std::string name() const override { return "replace-edge-op-with-triton-op"; }
  using Pass::run;
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override;

 private:
  SdpaTree tree_;
};

}  // namespace sdpa::cuda_triton
