#include "backends/aten/math_decomposition.h"

#include <gtest/gtest.h>

#include "backends/common/sdpa_entry.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/graph_verify.h"
#include "harness/ir/interpreter.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::aten {
namespace {

Case gqa_case() {
  Case c;
  c.dtype = DType::bf16;
  c.batch = {SymExpr(2)};
  c.q_heads = 4;
  c.kv_heads = 2;
  c.enable_gqa = true;
  c.q_len = SymExpr::symbol("s0");
  c.kv_len = SymExpr::symbol("s0");
  c.symbols["s0"] = {5, 1, 16};
  c.runtime = {{{"s0", 5}}};
  c.head_dim = 8;
  c.value_dim = 4;
  c.is_causal = true;
  return c;
}

TEST(MathDecomposition, EmitsTheMathGraph) {
  Case c = gqa_case();
  Graph g = sdpa_entry_graph(c);
  Pass::Result r = MathDecompositionPass(Mutant::none).run(g, c.shape_env());
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_TRUE(r.decisions[0].rewrite);
  EXPECT_TRUE(verify_graph(r.graph).empty());
  EXPECT_EQ(r.graph.count(kSdpaOp), 0);
  EXPECT_EQ(r.graph.count("aten.repeat_interleave.self_int"), 2);
  EXPECT_EQ(r.graph.count("aten.mul.Scalar"), 2);
  EXPECT_EQ(r.graph.count("aten.tril.default"), 1);
  EXPECT_EQ(r.graph.count("aten._safe_softmax.default"), 1);
  EXPECT_EQ(r.graph.count("aten._to_copy.default"), 4);  // q, k, v up to f32; out back to bf16
  std::string text = print_graph(r.graph);
  EXPECT_NE(text.find("f32[2, 4, s0, s0] = call_function[target=aten.matmul.default]"), std::string::npos) << text;
}

TEST(MathDecomposition, MutantsChangeTheGraph) {
  Case c = gqa_case();
  Graph g = sdpa_entry_graph(c);
  ShapeEnv env = c.shape_env();
  EXPECT_EQ(MathDecompositionPass(Mutant::drop_scale).run(g, env).graph.count("aten.mul.Scalar"), 0);
  EXPECT_EQ(MathDecompositionPass(Mutant::gqa_modulo).run(g, env).graph.count("aten.repeat.default"), 2);
  std::string br = print_graph(MathDecompositionPass(Mutant::causal_bottom_right).run(g, env).graph);
  EXPECT_NE(br.find("aten.tril.default](args = (%ones, 0)"), std::string::npos) << br;  // s0 - s0 = 0
}

TEST(MathDecomposition, ExactRunMatchesTheFusedReference) {
  // Decomposed graph and the naive fused kernel agree in exact numerics.
  Case c = gqa_case();
  c.dtype = DType::f64;
  c.data.seed = 11;
  Graph g = sdpa_entry_graph(c);
  Graph d = MathDecompositionPass(Mutant::none).run(g, c.shape_env()).graph;
  CaseTensors t = make_case_tensors(c, c.runtime[0]);
  std::map<std::string, Tensor> in{{"q", t.q}, {"k", t.k}, {"v", t.v}};
  RunContext ctx{c.runtime[0], c.data.seed};
  Tensor fused = interpret(g, exact_kernels(), in, ctx).outputs[0];
  Tensor decomposed = interpret(d, exact_kernels(), in, ctx).outputs[0];
  ASSERT_EQ(fused.shape, decomposed.shape);
  for (int64_t i = 0; i < fused.numel(); ++i) EXPECT_NEAR(fused.data[i], decomposed.data[i], 1e-13);
}

}  // namespace
}  // namespace sdpa::aten
