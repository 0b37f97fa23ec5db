// MatmulToBmmPass on the examples of cortex-m-and-xnnpack.md §5.1 and §5.2.
#include "backends/cortex_m/matmul_to_bmm_pass.h"

#include <gtest/gtest.h>

#include "harness/ir/graph_printer.h"
#include "harness/ir/interpreter.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::cortex_m {
namespace {

Graph matmul(const SymShape& a, const SymShape& b, const SymShape& out) {
  Graph g;
  ValueRef x = g.placeholder("a", {DType::f32, a}), y = g.placeholder("b", {DType::f32, b});
  g.outputs = {g.call("aten.matmul.default", {x, y}, {}, {{DType::f32, out}})};
  return g;
}

Tensor iota(const Shape& s, double step) {
  Tensor t(DType::f32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data[i] = step * static_cast<double>(i % 7 - 3);
  return t;
}

TEST(MatmulToBmm, RankFourBecomesReshapeBmmReshape) {
  Graph g = matmul({1, 4, 16, 8}, {1, 4, 8, 16}, {1, 4, 16, 16});
  Graph r = MatmulToBmmPass().run(g, {}).graph;
  EXPECT_EQ(r.count("aten.matmul.default"), 0);
  EXPECT_EQ(r.count("aten.bmm.default"), 1);
  EXPECT_EQ(r.count("aten.reshape.default"), 3);
  const std::string text = print_graph(r);
  EXPECT_NE(text.find("f32[4, 16, 16] = call_function[target=aten.bmm.default]"), std::string::npos) << text;
  std::map<std::string, Tensor> in{{"a", iota({1, 4, 16, 8}, 0.5)}, {"b", iota({1, 4, 8, 16}, 0.25)}};
  const KernelSet k = make_reference_kernels("f32", Numerics::emulated);
  Tensor want = interpret(g, k, in, {}).outputs[0], got = interpret(r, k, in, {}).outputs[0];
  EXPECT_EQ(got.shape, want.shape);
  EXPECT_EQ(got.data, want.data);  // the same summation order: bit-identical
}

TEST(MatmulToBmm, RankThreeWithEqualBatchBecomesOneBmm) {
  Graph r = MatmulToBmmPass().run(matmul({2, 4, 8}, {2, 8, 4}, {2, 4, 4}), {}).graph;
  EXPECT_EQ(r.count("aten.bmm.default"), 1);
  EXPECT_EQ(r.count("aten.reshape.default"), 0);
}

TEST(MatmulToBmm, BroadcastRankTwoAndMixedRanksAreLeftAlone) {
  for (Graph g : {matmul({1, 4, 8}, {2, 8, 4}, {2, 4, 4}), matmul({4, 8}, {8, 4}, {4, 4}),
                  matmul({2, 3, 4, 5}, {3, 5, 6}, {2, 3, 4, 6})}) {
    Graph r = MatmulToBmmPass().run(g, {}).graph;
    EXPECT_EQ(print_graph(r), print_graph(g));
  }
}

}  // namespace
}  // namespace sdpa::cortex_m
