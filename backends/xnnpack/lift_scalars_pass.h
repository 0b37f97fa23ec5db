#pragma once
/// LiftConstantScalarOperandsPass (executorch PR #20515 at 9eac80e90c,
/// semantics/cortex-m-and-xnnpack.md §3.4): mul.Scalar becomes mul.Tensor
/// with the scalar as a 0-dim constant buffer, so the partitioner takes it;
/// a MUL that reaches a bmm through only expand_copy / view_copy is kept.
/// At 257ef3a853, after review moved that logic into ConvertToSDPAPass, the
/// guard is gone: every such MUL is lifted.
#include "harness/check/target.h"

namespace sdpa::xnnpack {

class LiftConstantScalarOperandsPass : public Pass {
 public:
  /// guarded=false drops the _feeds_sdpa_qk_bmm guard: the pass at
  /// 257ef3a853, or the self-test mutant of the guarded one.
  explicit LiftConstantScalarOperandsPass(bool guarded = true) : guarded_(guarded) {}
  std::string name() const override { return "LiftConstantScalarOperandsPass"; }
  using Pass::run;
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override;

 private:
  bool guarded_;
};

/// _feeds_sdpa_qk_bmm: whether node `index` reaches a bmm through users that
/// are only expand_copy and view_copy; `users` is g.users_of_each(), found
/// once for the pass's many questions.
bool feeds_bmm_through_copies(const Graph& g, int index, const std::vector<std::vector<int>>& users);

}  // namespace sdpa::xnnpack
