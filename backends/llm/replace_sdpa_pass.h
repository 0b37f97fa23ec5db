#pragma once
/// ReplaceSDPAWithCustomSDPAPass (ExecuTorch extension/llm/export/
/// export_passes.py): aten SDPA in [B, H, L, D] -> llama.custom_sdpa in
/// [B, L, H, D] with transposes around it, under two guard policies.
#include <string>
#include <vector>

#include "backends/common/sdpa_entry.h"
#include "backends/llm/executorch_revision.h"
#include "harness/check/target.h"

namespace sdpa::llm {

/// `upstream`: the pass as ExecuTorch main has it (semantics/llm-and-cuda.md
/// §2.1). `contract`: rewrite exactly when custom_sdpa computes what aten
/// computes at every size the symbols allow (semantics/passes.md §3).
enum class GuardPolicy { upstream, contract };

/// The rules of the contract guard, in the order it checks them.
enum class ContractRule {
  rank,                // q, k, v of rank 4
  dtype,               // f32, f16 or bf16 (f32 only before 411a01e1b9)
  heads,               // Hq == Hkv, or enable_gqa with Hq % Hkv == 0, or Hkv == 1
  head_dims,           // E == Ev
  dropout,             // dropout_p == 0: the kernel ignores dropout
  query_length,        // Lq >= 1: at Lq = 0 the kernel divides by qSplitSize = 0 (SIGFPE)
  causal_lengths,      // causal: Lq <= Lkv, so start_pos 0 aligns top-left
  causal_scale,        // causal: scale > 0, or the -inf fill times scale is NaN/+inf
  unmasked_lengths,    // unmasked, non-causal: Lq == Lkv, or keys past Lq are cut
  mask_shape,          // the mask squeezes to exactly [Lq, Lkv]
  mask_dtype,          // bool -> 0/-inf f32, f16/bf16 -> f32; other dtypes keep the node
  static_facts,        // size facts hold for every size in range, not just the hints
  assume_causal_first, // assume_causal_mask applies before any rule reads mask or causal
};
const std::vector<std::pair<ContractRule, std::string>>& contract_rules();

struct PassConfig {
  GuardPolicy policy = GuardPolicy::upstream;
  bool assume_causal_mask = false;
  /// A contract rule switched off (self-tests of the harness), or none.
  std::optional<ContractRule> weakened;
  /// A contract rule evaluated wrongly (self-tests of the explanations):
  /// causal-lengths as Lq <= Lkv + 1, unmasked-lengths as Lq <= Lkv. The
  /// guard still reports the rule under its own name.
  std::optional<ContractRule> misevaluated;
  /// The ExecuTorch tree whose custom_sdpa the pass emits: its Meta kernel
  /// runs at pass time, and the contract's dtype rule follows its dtypes.
  EtRevision revision;
};

class ReplaceSdpaWithCustomSdpaPass : public Pass {
 public:
  explicit ReplaceSdpaWithCustomSdpaPass(PassConfig config) : config_(config) {}
  std::string name() const override { return "replace-sdpa-with-custom-sdpa"; }
  using Pass::run;
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override;

  /// The contract guard's verdict on one SDPA node, without rewriting.
  Decision contract_guard(const Graph& g, const Node& n, const ShapeEnv& env) const;

 private:
  PassConfig config_;
};

}  // namespace sdpa::llm
