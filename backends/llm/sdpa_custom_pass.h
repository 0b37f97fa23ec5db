#pragma once
/// replace_sdpa_with_custom_op (ExecuTorch examples/models/llama/
/// source_transformation/sdpa.py, semantics/llm-and-cuda.md §2.3): every
/// llama SDPA module swapped for SDPACustom, modeled on the exported graph.
/// The SDPA module is the region export gives it (sdpa_custom_entry.h):
/// aten SDPA over repeat_interleave(k) and repeat_interleave(v), its output
/// through transpose(1, 2), contiguous and view to [B, Lq, dim].
/// SDPACustom transposes q, k, v to [B, S, H, D], casts them to f32, calls
/// llama.custom_sdpa (causal at input_pos[0] without the mask, or with the
/// mask as given and start_pos 0) and views the result as [B, Lq, dim] in
/// the input dtype.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/llm/replace_sdpa_pass.h"

namespace sdpa::llm {

/// The rules of the swap's contract guard, in the order it checks them.
enum class SwapRule {
  query_length,  // Lq >= 1 at every size: at Lq = 0 custom_sdpa divides by qSplitSize = 0
  causal_slice,  // use_attention_mask=False drops the mask: it must be the causal rows at start_pos
  cache_bounds,  // use_attention_mask=False: start_pos + Lq <= Lkv at every size, or custom_sdpa aborts
  mask_rank,     // use_attention_mask=True: a 2-D mask (the Meta kernel asserts it during export)
  mask_dtype,    // use_attention_mask=True: an f32 mask (custom_sdpa takes no other; bool fails export)
  mask_shape,    // use_attention_mask=True: rows Lq, columns Lkv at every size (custom_sdpa does not broadcast)
};
const std::vector<std::pair<SwapRule, std::string>>& swap_rules();
std::optional<SwapRule> parse_swap_rule(const std::string& name);

struct SwapConfig {
  GuardPolicy policy = GuardPolicy::upstream;
  bool use_attention_mask = false;  // SDPACustom's constructor argument
  std::optional<SwapRule> weakened;  // a contract rule switched off (self-tests)
};

/// One SDPA module of a graph: the indices of its nodes and its inputs.
struct SdpaModule {
  int sdpa = -1, repeat_k = -1, repeat_v = -1, transpose = -1, contiguous = -1, view = -1;
  ValueRef q, k, v;                  // k and v: the cache, before repeat_interleave
  std::optional<ValueRef> mask;
  std::optional<SymExpr> start_pos;  // input_pos[0].item(), where the graph reads it
};

/// Every SDPA module of g: the region above, its inner values used by no
/// node outside it.
std::vector<SdpaModule> find_sdpa_modules(const Graph& g);

/// The start row of m's mask when it is the causal buffer's rows
/// [S, S + Lq) at the module's start_pos S (aten.slice.Tensor of a bool
/// tril(ones(Lkv, Lkv)) constant along dim 0, step 1), or none.
std::optional<SymExpr> causal_slice_start(const Graph& g, const SdpaModule& m);

class ReplaceSdpaWithCustomOpPass : public Pass {
 public:
  explicit ReplaceSdpaWithCustomOpPass(SwapConfig config) : config_(config) {}
  std::string name() const override { return "replace-sdpa-with-custom-op"; }
  using Pass::run;
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override;

  /// The contract guard's verdict on one module, without swapping.
  Decision contract_guard(const Graph& g, const SdpaModule& m, const ShapeEnv& env) const;

 private:
  Decision decide(const Graph& g, const SdpaModule& m, const ShapeEnv& env) const;
  SwapConfig config_;
};

}  // namespace sdpa::llm
