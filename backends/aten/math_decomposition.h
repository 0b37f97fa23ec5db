#pragma once
/// PyTorch's math decomposition of scaled_dot_product_attention
/// (aten._scaled_dot_product_attention_math): the aten target's one pass.
#include <string>

#include "harness/check/target.h"

namespace sdpa::aten {

/// Deliberately wrong variants, for the self-tests that prove checks fail.
enum class Mutant { none, drop_scale, causal_bottom_right, gqa_modulo, softmax_no_max, matmul_bf16_output };
Mutant parse_mutant(const std::string& name);

class MathDecompositionPass : public Pass {
 public:
  explicit MathDecompositionPass(Mutant mutant) : mutant_(mutant) {}
  std::string name() const override { return "math-decomposition"; }
  using Pass::run;
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override;

 private:
  Mutant mutant_;
};

}  // namespace sdpa::aten
