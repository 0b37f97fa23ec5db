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

/// A wrong replacement, for the self-test mutants: the SDPA node leaves out
/// the fused call's scale (a scale lost between two passes), or its
/// enable_gqa where the head counts may differ.
enum class ReplaceFault { none, drop_scale, drop_enable_gqa };
std::optional<ReplaceFault> parse_replace_fault(const std::string& name);

class ReplaceFusedSdpaWithSdpaPass : public Pass {
 public:
  /// `weakened`: a rule switched off (self-tests of the harness), or none.
  explicit ReplaceFusedSdpaWithSdpaPass(std::optional<FusedRule> weakened = std::nullopt,
                                        ReplaceFault fault = ReplaceFault::none)
      : weakened_(weakened), fault_(fault) {}
  std::string name() const override { return "replace-fused-sdpa-with-sdpa"; }
  using Pass::run;
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override;

  /// The guard's decision on fused node `index` of `g`, without rewriting.
  /// `where` names the cond branch holding `g` ("%cond/true_branch/"), empty
  /// at the top level; it prefixes the decision's node.
  Decision guard(const Graph& g, int index, const ShapeEnv& env, const std::string& where = "") const;

 private:
  Graph rewrite(const Graph& g, const ShapeEnv& env, const RewriteControl& control, const std::string& where,
                std::vector<Decision>& decisions) const;
  std::optional<FusedRule> weakened_;
  ReplaceFault fault_;
};

/// The name the rewrite gives the SDPA node that replaces fused node `fused`.
std::string replacement_name(const std::string& fused);

/// The prefix naming branch `branch` (0: true, 1: false) of cond node `cond`
/// inside a graph named by `where`.
std::string branch_prefix(const std::string& where, const Node& cond, size_t branch);

/// Nodes of `g` (by index) that read an output other than 0 of node `index`;
/// -1 stands for the graph's output list.
std::vector<int> readers_of_extra_outputs(const Graph& g, int index);

}  // namespace sdpa::cuda
