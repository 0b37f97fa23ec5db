// The scale each cortex-m graph form computes with: the entry call's
// keyword or 1/sqrt(E), the float MUL's literal, the quantized MUL's
// constant as it dequantizes; none where the fold removed the MUL.
#include "backends/cortex_m/scale_constant.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/common/sdpa_entry.h"
#include "backends/cortex_m/calibration.h"
#include "backends/cortex_m/cortex_m_ops.h"
#include "backends/cortex_m/decompose_sdpa_pass.h"
#include "backends/cortex_m/matmul_to_bmm_pass.h"
#include "backends/cortex_m/quantize_lower_pass.h"
#include "harness/case/tensor_data.h"

namespace sdpa::cortex_m {
namespace {

Case call(std::optional<double> scale) {
  Case c;
  c.q_len = 2;
  c.kv_len = 3;
  c.head_dim = 4;
  c.scale = scale;
  c.data.seed = 3;
  return c;
}

// The graph after the passes: decomposed (float), or lowered to int8.
Graph after(const Case& c, Policy policy, bool lowered, QuantizerConfig cfg = {}) {
  Graph g = sdpa_entry_graph(c);
  CaseTensors t = make_case_tensors(c, {});
  attach_example_inputs(g, {{"q", t.q}, {"k", t.k}, {"v", t.v}});
  g = DecomposeSdpaPass(policy, std::nullopt).run(g, c.shape_env()).graph;
  g = MatmulToBmmPass().run(g, {}).graph;
  if (!lowered) return g;
  cfg.fold = policy == Policy::decompose_fold;
  return QuantizeLowerPass(cfg).run(g, {}).graph;
}

double scale_of(const Graph& g) {
  const std::vector<GraphConstant> k = scale_constants(g);
  EXPECT_EQ(k.size(), 1u);
  return k.empty() ? std::nan("") : k[0].value;
}

TEST(ScaleConstant, TheEntryCallsKeywordOrItsDefault) {
  EXPECT_EQ(scale_of(sdpa_entry_graph(call(0.3))), 0.3);
  EXPECT_EQ(scale_of(sdpa_entry_graph(call(std::nullopt))), 0.5);
}

TEST(ScaleConstant, TheFloatMulsLiteral) { EXPECT_EQ(scale_of(after(call(0.3), Policy::decompose, false)), 0.3); }

TEST(ScaleConstant, TheQuantizedMulsConstantAsItDequantizes) {
  EXPECT_NEAR(scale_of(after(call(0.3), Policy::decompose, true)), 0.3, 1e-16);
  EXPECT_EQ(scale_of(after(call(1e-8), Policy::decompose, true)), 0.0);
  QuantizerConfig upstream;
  upstream.mul_check = MulCheck::upstream;
  EXPECT_EQ(scale_of(after(call(1e-8), Policy::decompose, true, upstream)), 1e-8);
}

TEST(ScaleConstant, NoneWhereTheFoldRemovedTheMul) {
  Case c;  // QuantizeLower.FoldRemovesTheMulOnlyForProportionalQparams's call
  c.batch = {SymExpr(2)};
  c.q_heads = c.kv_heads = 2;
  c.q_len = 3;
  c.kv_len = 5;
  c.head_dim = 8;
  c.value_dim = 4;
  c.data.seed = 11;
  const Graph g = after(c, Policy::decompose_fold, true);
  ASSERT_EQ(g.count(kMulOp), 0);
  EXPECT_TRUE(scale_constants(g).empty());
}

}  // namespace
}  // namespace sdpa::cortex_m
