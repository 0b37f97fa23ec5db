#pragma once
/// ReplaceFusedSdpaWithSdpaPass (semantics/passes.md §2, policy `replace`):
/// each flash, efficient and cuDNN call back to aten SDPA with the same q, k,
/// v, bias, dropout, causal flag and scale, where SDPA computes the same result.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/check/target.h"

namespace sdpa::cuda {

/// The guard's rules, in the order it checks them.
enum class FusedRule {
  outputs_used,    // only output 0 is read: SDPA returns no logsumexp
  causal_bias,     // causal has no bias: SDPA takes no mask with is_causal
  causal_lengths,  // causal: Lq == Lkv statically known (flash aligns bottom-right)
};
const std::vector<std::pair<FusedRule, std::string>>& fused_rules();
std::optional<FusedRule> parse_fused_rule(const std::string& name);

class ReplaceFusedSdpaWithSdpaPass : public Pass {
 public:
  /// `weakened`: a rule switched off (self-tests of the harness), or none.
  explicit ReplaceFusedSdpaWithSdpaPass(std::optional<FusedRule> weakened = std::nullopt)
      : weakened_(weakened) {}
  std::string name() const override { return "replace-fused-sdpa-with-sdpa"; }
  using Pass::run;
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override;

  /// The guard's decision on fused node `index` of `g`, without rewriting.
  Decision guard(const Graph& g, int index, const ShapeEnv& env) const;

 private:
  std::optional<FusedRule> weakened_;
};

/// The name the rewrite gives the SDPA node that replaces fused node `fused`.
std::string replacement_name(const std::string& fused);

/// Nodes of `g` (by index) that read an output other than 0 of node `index`;
/// -1 stands for the graph's output list.
std::vector<int> readers_of_extra_outputs(const Graph& g, int index);

}  // namespace sdpa::cuda
