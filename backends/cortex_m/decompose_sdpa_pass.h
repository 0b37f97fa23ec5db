#pragma once
/// DecomposeSDPAPass: the SDPA decomposition the Cortex-M
/// transform_for_annotation pipeline runs before the quantizer
/// (semantics/passes.md §1), as guard policies:
///   decompose       matmul(q, kᵀ), one MUL by scale on the scores,
///                   softmax(-1), matmul(attn, v);
///   decompose+fold  the same graph (the lowering then folds the MUL);
///   shared-decomp   the generic transform users apply today
///                   (shared_decomposition.h, cortex-m-and-xnnpack.md §1.3):
///                   sqrt(scale) multiplied into q and into kᵀ as two scalar
///                   MULs, masks and causal added, _safe_softmax, GQA tiled.
/// The guard of decompose and decompose+fold takes a plain fp32 SDPA only:
/// unmasked, non-causal, no dropout, equal head counts without enable_gqa,
/// static non-empty shapes of rank 3 or more, equal leading dims on q, k and
/// v. Any other call is left unchanged, the first failed rule deciding.
/// shared-decomp has no guard (one rule, `sdpa-node`, always accepts): it
/// decomposes every SDPA node or raises as the shared transform does.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/cortex_m/shared_decomposition.h"
#include "harness/check/target.h"

namespace sdpa::cortex_m {

enum class Policy { none, decompose, decompose_fold, shared_decomp };
std::optional<Policy> parse_policy(const std::string& name);
const char* policy_name(Policy p);

enum class GuardRule { float32, no_mask, not_causal, no_dropout, equal_heads, static_shapes, rank, leading_dims };
/// Every rule with its option name ("no-mask"), in the order the guard checks them.
const std::vector<std::pair<GuardRule, std::string>>& guard_rules();
/// The rule named `name`; none for "none". InputError for an unknown name.
std::optional<GuardRule> parse_guard_rule(const std::string& name);

class DecomposeSdpaPass : public Pass {
 public:
  /// `weakened`: one rule switched off (always passes), for the self-tests;
  /// `mutant`: a wrong shared-decomp emitter, for the self-tests.
  DecomposeSdpaPass(Policy policy, std::optional<GuardRule> weakened, SharedMutant mutant = SharedMutant::none)
      : policy_(policy), weakened_(weakened), mutant_(mutant) {}
  std::string name() const override { return "decompose-sdpa"; }
  /// The guard's decision on SDPA node `index` of `g`.
  Decision guard(const Graph& g, int index, const ShapeEnv& env) const;
  using Pass::run;
  /// Under shared-decomp, throws where the shared transform raises
  /// (SharedDecompError, std::domain_error "math domain error" for a
  /// negative explicit scale): the harness reports it as unexpected-error.
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override;

 private:
  Policy policy_;
  std::optional<GuardRule> weakened_;
  SharedMutant mutant_;
};

}  // namespace sdpa::cortex_m
