#include "harness/ir/interpreter.h"

#include <gtest/gtest.h>

#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa {
namespace {

Tensor vec(std::vector<double> v, DType t = DType::f32) {
  Tensor x(t, {static_cast<int64_t>(v.size())});
  x.data = std::move(v);
  return x;
}

TEST(Interpreter, RunsAtRuntimeSizes) {
  Graph g;
  SymShape s{SymExpr::symbol("s0")};
  ValueRef x = g.placeholder("x", {DType::f32, s});
  g.outputs = {g.call("aten.mul.Scalar", {x, 3.0}, {}, {{DType::f32, s}})};
  RunContext ctx{{{"s0", 2}}, 0};
  Execution e = interpret(g, exact_kernels(), {{"x", vec({1, 2})}}, ctx);
  EXPECT_EQ(e.outputs[0].data, (std::vector<double>{3, 6}));
}

TEST(Interpreter, ShapeDifferentFromTheDeclarationIsAGraphError) {
  Graph g;
  ValueRef x = g.placeholder("x", {DType::f32, {SymExpr(2)}});
  g.outputs = {g.call("aten.mul.Scalar", {x, 3.0}, {}, {{DType::f32, {SymExpr(3)}}})};
  EXPECT_THROW(interpret(g, exact_kernels(), {{"x", vec({1, 2})}}, {}), GraphError);
}

TEST(Interpreter, MissingKernelIsUnsupportedNamingTheOp) {
  Graph g;
  ValueRef x = g.placeholder("x", {DType::f32, {SymExpr(2)}});
  g.outputs = {g.call("llama.custom_sdpa.default", {x}, {}, {{DType::f32, {SymExpr(2)}}})};
  try {
    interpret(g, exact_kernels(), {{"x", vec({1, 2})}}, {});
    FAIL();
  } catch (const KernelError& e) {
    EXPECT_EQ(e.kind, KernelError::Kind::unsupported);
    EXPECT_NE(std::string(e.what()).find("llama.custom_sdpa.default"), std::string::npos);
  }
}

TEST(Interpreter, CondRunsTheChosenBranch) {
  auto branch = [](double factor) {
    auto b = std::make_shared<Graph>();
    ValueRef x = b->placeholder("x", {DType::f32, {SymExpr(2)}});
    b->outputs = {b->call("aten.mul.Scalar", {x, factor}, {}, {{DType::f32, {SymExpr(2)}}})};
    return b;
  };
  for (double pred : {1.0, 0.0}) {
    Graph g;
    ValueRef p = g.placeholder("p", {DType::b8, {SymExpr(1)}});
    ValueRef x = g.placeholder("x", {DType::f32, {SymExpr(2)}});
    ValueRef c = g.call("cond", {p, x}, {}, {{DType::f32, {SymExpr(2)}}});
    g.nodes[c.node].subgraphs = {branch(10.0), branch(-1.0)};
    g.outputs = {c};
    Execution e = interpret(g, exact_kernels(), {{"p", vec({pred}, DType::b8)}, {"x", vec({1, 2})}}, {});
    EXPECT_EQ(e.outputs[0].data[1], pred != 0.0 ? 20.0 : -2.0);
  }
}

TEST(Interpreter, KeepsEveryValueWhenAsked) {
  Graph g;
  ValueRef x = g.placeholder("x", {DType::f32, {SymExpr(2)}});
  ValueRef a = g.call("aten.mul.Scalar", {x, 2.0}, {}, {{DType::f32, {SymExpr(2)}}});
  g.outputs = {g.call("aten.add.Tensor", {a, a}, {}, {{DType::f32, {SymExpr(2)}}})};
  Execution e = interpret(g, exact_kernels(), {{"x", vec({1, 2})}}, {}, true);
  ASSERT_EQ(e.values.size(), 3u);
  EXPECT_EQ(e.values[1][0].data, (std::vector<double>{2, 4}));
}


// Inputs are read in place and outputs move out: a graph that returns its
// input, or one value twice, still hands back copies the caller owns, and
// keep_values holds the placeholders' values too.
TEST(Interpreter, OutputsAreTheCallersWhateverTheyAlias) {
  Graph g;
  ValueRef x = g.placeholder("x", {DType::f32, {SymExpr(2)}});
  ValueRef a = g.call("aten.mul.Scalar", {x, 2.0}, {}, {{DType::f32, {SymExpr(2)}}});
  g.outputs = {x, a, a};
  const std::map<std::string, Tensor> inputs = {{"x", vec({1, 2})}};
  for (bool keep : {false, true}) {
    Execution e = interpret(g, exact_kernels(), inputs, {}, keep);
    ASSERT_EQ(e.outputs.size(), 3u);
    EXPECT_EQ(e.outputs[0].data, (std::vector<double>{1, 2}));
    EXPECT_EQ(e.outputs[1].data, (std::vector<double>{2, 4}));
    EXPECT_EQ(e.outputs[2].data, (std::vector<double>{2, 4}));
    if (keep) {
      ASSERT_EQ(e.values.size(), 2u);
      EXPECT_EQ(e.values[0][0].data, (std::vector<double>{1, 2}));
      EXPECT_EQ(e.values[1][0].data, (std::vector<double>{2, 4}));
    }
  }
  EXPECT_EQ(inputs.at("x").data, (std::vector<double>{1, 2}));
  // A placeholder's second output does not exist.
  Graph bad;
  ValueRef y = bad.placeholder("x", {DType::f32, {SymExpr(2)}});
  bad.outputs = {ValueRef{y.node, 1}};
  EXPECT_THROW(interpret(bad, exact_kernels(), inputs, {}), std::out_of_range);
}

}  // namespace
}  // namespace sdpa
