#include "harness/ir/graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>

#include "harness/ir/graph_printer.h"
#include "harness/ir/graph_verify.h"

namespace sdpa {
namespace {

TEST(Graph, PrintsLikeFx) {
  Graph g;
  SymShape s{SymExpr(2), SymExpr::symbol("s0"), SymExpr(8)};
  ValueRef q = g.placeholder("q", {DType::f32, s});
  ValueRef m = g.call("aten.mul.Scalar", {q, 0.5}, {}, {{DType::f32, s}});
  ValueRef m2 = g.call("aten.mul.Scalar", {m, 0.5}, {}, {{DType::f32, s}});
  g.outputs = {m2};
  std::string text = print_graph(g);
  EXPECT_NE(text.find("%q : f32[2, s0, 8] = placeholder[target=q]"), std::string::npos) << text;
  EXPECT_NE(text.find("%mul_1 : f32[2, s0, 8] = call_function[target=aten.mul.Scalar](args = (%mul, 0.5), kwargs = {})"),
            std::string::npos) << text;
  EXPECT_NE(text.find("return (%mul_1,)"), std::string::npos);
}

// A pass that leaves every node kept may still change the graph: every
// difference counts, also one the printed form rounds away.
TEST(Graph, SameGraphSeesEveryChange) {
  auto make = [](double factor, double constant, const std::string& name) {
    Graph g;
    SymShape s{SymExpr(2), SymExpr::symbol("s0")};
    ValueRef q = g.placeholder("q", {DType::f32, s});
    ValueRef c = g.constant("_scale", Tensor(DType::f32, {1}, constant), {SymExpr(1)});
    ValueRef m = g.call("aten.mul.Scalar", {q, factor}, {}, {{DType::f32, s}}, name);
    g.outputs = {g.call("aten.mul.Tensor", {m, c}, {}, {{DType::f32, s}})};
    return g;
  };
  const Graph g = make(0.5, 2.0, "mul");
  EXPECT_TRUE(same_graph(g, make(0.5, 2.0, "mul")));
  EXPECT_TRUE(same_graph(make(NAN, 2.0, "mul"), make(NAN, 2.0, "mul")));
  const Graph tiny = make(0.5 + 1e-12, 2.0, "mul");
  EXPECT_EQ(print_graph(tiny), print_graph(g));
  EXPECT_FALSE(same_graph(tiny, g));
  EXPECT_FALSE(same_graph(make(0.5, 2.5, "mul"), g));
  EXPECT_FALSE(same_graph(make(0.5, 2.0, "scale"), g));
  EXPECT_FALSE(same_graph(make(-0.0, 2.0, "mul"), make(0.0, 2.0, "mul")));
  Graph other_dtype = g;
  other_dtype.nodes[2].outputs[0].dtype = DType::f16;
  EXPECT_FALSE(same_graph(other_dtype, g));
  Graph other_output = g;
  other_output.outputs = {ValueRef{2, 0}};
  EXPECT_FALSE(same_graph(other_output, g));
}

// users_of_each() lists each node's readers once each, in node order, as
// users() does node by node: a reader of two outputs, of one output twice,
// through a kwarg, and a node nothing reads.
TEST(Graph, UsersOfEachAgreesWithUsers) {
  Graph g;
  SymShape s{SymExpr(4)};
  ValueRef x = g.placeholder("x", {DType::f32, s});
  const ValueInfo half{DType::f32, {SymExpr(2)}};
  ValueRef two = g.call("aten.split.Tensor", {x, int64_t{2}}, {}, {half, half});
  ValueRef second{two.node, 1};
  ValueRef sum = g.call("aten.add.Tensor", {two, second}, {}, {{DType::f32, {SymExpr(2)}}});
  ValueRef sq = g.call("aten.mul.Tensor", {sum, sum}, {{"other", sum}}, {{DType::f32, {SymExpr(2)}}});
  g.call("aten.neg.default", {x}, {}, {{DType::f32, s}});
  g.outputs = {sq};
  const auto each = g.users_of_each();
  ASSERT_EQ(each.size(), g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) EXPECT_EQ(each[i], g.users(static_cast<int>(i))) << i;
  EXPECT_EQ(each[static_cast<size_t>(x.node)], (std::vector<int>{two.node, 4}));
  EXPECT_EQ(each[static_cast<size_t>(two.node)], std::vector<int>{sum.node});
  EXPECT_EQ(each[static_cast<size_t>(sum.node)], std::vector<int>{sq.node});
  EXPECT_TRUE(each[4].empty());
}

TEST(Graph, MultiOutputNodesAndQParams) {
  Graph g;
  SymShape s{SymExpr(4)};
  ValueRef x = g.placeholder("x", {DType::f32, s});
  ValueRef d = g.call("aten.native_dropout.default", {x, 0.5, true}, {}, {{DType::f32, s}, {DType::b8, s}});
  ValueInfo q{DType::i8, s, QParams{0.02, -3}};
  ValueRef c = g.constant("_tensor_constant0", Tensor(DType::i8, {4}), s);
  g.nodes[c.node].outputs[0] = q;
  g.constants["_tensor_constant0"].qparams = q.qparams;
  g.outputs = {ValueRef{d.node, 1}};
  std::string text = print_graph(g);
  EXPECT_NE(text.find("(f32[4], bool[4])"), std::string::npos) << text;
  EXPECT_NE(text.find("return (%native_dropout[1],)"), std::string::npos) << text;
  EXPECT_NE(text.find("int8[4]{scale=0.02, zp=-3}"), std::string::npos) << text;
  EXPECT_TRUE(verify_graph(g).empty());
}

TEST(GraphVerify, ReportsTypeErrorsWithTheNodeName) {
  Graph g;
  SymShape s{SymExpr(1), SymExpr(2), SymExpr(2)};
  ValueRef a = g.placeholder("a", {DType::i8, s});
  ValueRef b = g.placeholder("b", {DType::i32, s});
  g.outputs = {g.call("aten.bmm.default", {a, b}, {}, {{DType::i32, s}})};
  auto problems = verify_graph(g);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("%bmm (aten.bmm.default): type error"), std::string::npos) << problems[0];
}

TEST(GraphVerify, ReportsDanglingReferences) {
  Graph g;
  ValueRef a = g.placeholder("a", {DType::f32, {SymExpr(1)}});
  g.outputs = {g.call("aten.mul.Tensor", {a, ValueRef{7, 0}}, {}, {{DType::f32, {SymExpr(1)}}})};
  EXPECT_FALSE(verify_graph(g).empty());
}

// Each problem names where the bad value is read: the argument's index,
// the keyword's name, the graph's output; and a name given twice.
TEST(GraphVerify, NamesWhereADanglingValueIsReadAndADuplicateName) {
  Graph g;
  ValueRef a = g.placeholder("a", {DType::f32, {SymExpr(1)}});
  ValueRef m = g.call("aten.mul.Tensor", {a, ValueRef{7, 0}}, {{"alpha", ValueRef{5, 1}}},
                      {{DType::f32, {SymExpr(1)}}});
  ValueRef n = g.call("aten.neg.default", {m}, {}, {{DType::f32, {SymExpr(1)}}});
  g.nodes[n.node].name = "mul";
  g.outputs = {n, ValueRef{9, 0}};
  const std::vector<std::string> problems = verify_graph(g);
  const std::vector<std::string> want = {
      "%mul (aten.mul.Tensor): argument 1 reads a value that is not defined before it (node 7, output 0)",
      "%mul (aten.mul.Tensor): keyword alpha reads a value that is not defined before it (node 5, output 1)",
      "%mul (aten.neg.default): duplicate node name",
      "graph output reads a value that is not defined before it (node 9, output 0)"};
  EXPECT_EQ(problems, want);
}

TEST(GraphRewriter, ReplacesANodeAndRemapsItsUsers) {
  Graph g;
  SymShape s{SymExpr(3)};
  ValueRef x = g.placeholder("x", {DType::f32, s});
  ValueRef m = g.call("aten.mul.Scalar", {x, 2.0}, {}, {{DType::f32, s}});
  g.outputs = {g.call("aten.add.Tensor", {m, x}, {}, {{DType::f32, s}})};
  GraphRewriter rw(g);
  for (const Node& n : g.nodes) {
    if (n.op != "aten.mul.Scalar") {
      rw.copy(n);
      continue;
    }
    ValueRef in = rw.map(std::get<ValueRef>(n.args[0]));
    rw.replace(n, {rw.out().call("aten.add.Tensor", {in, in}, {}, {{DType::f32, s}})});
  }
  Graph out = rw.finish();
  EXPECT_EQ(out.count("aten.mul.Scalar"), 0);
  EXPECT_EQ(out.count("aten.add.Tensor"), 2);
  EXPECT_TRUE(verify_graph(out).empty());
  EXPECT_EQ(out.users(0).size(), 2u);
}

TEST(GraphRewriter, ACopyOfEveryNodeIsTheSameGraph) {
  Graph g;
  SymShape s{SymExpr::symbol("s0"), SymExpr(2)};
  ValueRef x = g.placeholder("x", {DType::f16, s});
  ValueRef c = g.call("aten._to_copy.default", {x}, {{"dtype", DType::f32}}, {{DType::f32, s}});
  ValueRef d = g.call("aten.native_dropout.default", {c, 0.5, true}, {},
                      {{DType::f32, s}, {DType::b8, s}});
  g.outputs = {d, ValueRef{d.node, 1}};
  auto branch = std::make_shared<Graph>();
  branch->outputs = {branch->placeholder("y", {DType::f32, s})};
  g.nodes[d.node].subgraphs = {branch};
  GraphRewriter rw(g);
  for (const Node& n : g.nodes) rw.copy(n);
  EXPECT_TRUE(same_graph(rw.finish(), g));
}

TEST(GraphRewriter, ReadingANodeNotYetCopiedIsALogicError) {
  Graph g;
  SymShape s{SymExpr(3)};
  ValueRef x = g.placeholder("x", {DType::f32, s});
  ValueRef m = g.call("aten.mul.Scalar", {x, 2.0}, {}, {{DType::f32, s}});
  GraphRewriter rw(g);
  EXPECT_THROW(rw.map(x), std::logic_error);
  rw.copy(g.nodes[0]);
  EXPECT_EQ(rw.map(x).node, 0);
  EXPECT_THROW(rw.map(m), std::logic_error);
  EXPECT_THROW(rw.map(ValueRef{0, 1}), std::logic_error);
  EXPECT_THROW(rw.map(ValueRef{9, 0}), std::logic_error);
  EXPECT_THROW(rw.map(ValueRef{-1, 0}), std::logic_error);
  Graph other;
  other.placeholder("y", {DType::f32, s});
  EXPECT_THROW(rw.copy(other.nodes[0]), std::logic_error);
  EXPECT_THROW(rw.replace(other.nodes[0], {x}), std::logic_error);
  EXPECT_EQ(rw.out().nodes.size(), 1u);
}

}  // namespace
}  // namespace sdpa
