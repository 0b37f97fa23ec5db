#pragma once
/// RemoveNoopExpandCopyPass (executorch backends/xnnpack/_passes/
/// remove_noop_expand_copy_pass.py, semantics/cortex-m-and-xnnpack.md §3.2):
/// an expand_copy whose output has its input's dtype and shape is an
/// identity; its users read the input instead. One of the transforms that
/// run before partitioning, ahead of LiftConstantScalarOperandsPass.
#include "harness/check/target.h"

namespace sdpa::xnnpack {

class RemoveNoopExpandCopyPass : public Pass {
 public:
  /// checked=false removes every expand_copy, broadcasting ones too (a self-test mutant).
  explicit RemoveNoopExpandCopyPass(bool checked = true) : checked_(checked) {}
  std::string name() const override { return "RemoveNoopExpandCopyPass"; }
  using Pass::run;
  /// Records no decisions: the pass has no guard, and the checker checks
  /// any change it makes for soundness.
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override;

 private:
  bool checked_;
};

/// Whether node `n` of `g` is an expand_copy that changes neither dtype nor shape.
bool is_noop_expand_copy(const Graph& g, const Node& n);

}  // namespace sdpa::xnnpack
