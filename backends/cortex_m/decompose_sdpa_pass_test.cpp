// DecomposeSDPAPass rule by rule: the eligible call decomposes into matmul,
// one scale MUL, softmax and matmul; every ineligible form is left unchanged
// with its deciding rule; a weakened rule lets its form through; shared-decomp
// writes sqrt(scale) into q and kᵀ (cortex-m-and-xnnpack.md §5.12).
#include "backends/cortex_m/decompose_sdpa_pass.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/common/sdpa_entry.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/graph_verify.h"
#include "harness/ir/interpreter.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::cortex_m {
namespace {

Case plain() {
  Case c;
  c.batch = {SymExpr(2)};
  c.q_heads = c.kv_heads = 2;
  c.q_len = 3;
  c.kv_len = 5;
  c.head_dim = 8;
  c.value_dim = 4;
  c.data.seed = 7;
  return c;
}

double mul_literal(const Graph& g, int which = 0) {
  for (const Node& n : g.nodes)
    if (n.op == "aten.mul.Scalar" && which-- == 0) return std::get<double>(n.args.at(1));
  return NAN;
}

TEST(DecomposeSdpa, EligibleCallBecomesMatmulMulSoftmaxMatmul) {
  Case c = plain();
  Pass::Result r = DecomposeSdpaPass(Policy::decompose, std::nullopt).run(sdpa_entry_graph(c), c.shape_env());
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_TRUE(r.decisions[0].rewrite) << r.decisions[0].deciding_rule;
  EXPECT_TRUE(verify_graph(r.graph).empty());
  EXPECT_EQ(r.graph.count(kSdpaOp), 0);
  EXPECT_EQ(r.graph.count("aten.matmul.default"), 2);
  EXPECT_EQ(r.graph.count("aten.mul.Scalar"), 1);
  EXPECT_EQ(r.graph.count("aten._softmax.default"), 1);
  EXPECT_DOUBLE_EQ(mul_literal(r.graph), 1 / std::sqrt(8.0));
  c.scale = 0.3;
  Pass::Result s = DecomposeSdpaPass(Policy::decompose, std::nullopt).run(sdpa_entry_graph(c), c.shape_env());
  EXPECT_DOUBLE_EQ(mul_literal(s.graph), 0.3);
}

TEST(DecomposeSdpa, DecompositionIsExact) {
  for (Policy p : {Policy::decompose, Policy::shared_decomp}) {
    Case c = plain();
    c.scale = 0.37;
    Graph g = sdpa_entry_graph(c);
    Graph d = DecomposeSdpaPass(p, std::nullopt).run(g, c.shape_env()).graph;
    CaseTensors t = make_case_tensors(c, {});
    std::map<std::string, Tensor> in{{"q", t.q}, {"k", t.k}, {"v", t.v}};
    Tensor a = interpret(g, exact_kernels(), in, {}).outputs[0], b = interpret(d, exact_kernels(), in, {}).outputs[0];
    ASSERT_EQ(a.shape, b.shape);
    for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data[i], b.data[i], 1e-12) << policy_name(p);
  }
}

struct Ineligible {
  std::string rule;
  std::function<void(Case&)> make;
};

std::vector<Ineligible> ineligible_forms() {
  return {{"float32", [](Case& c) { c.dtype = DType::f16; }},
          {"no-mask", [](Case& c) { c.mask = MaskSpec{DType::b8, {SymExpr(3), SymExpr(5)}}; }},
          {"not-causal", [](Case& c) { c.is_causal = true; }},
          {"no-dropout", [](Case& c) { c.dropout_p = 0.25; }},
          {"equal-heads", [](Case& c) { c.q_heads = 4, c.enable_gqa = true; }},
          {"equal-heads", [](Case& c) { c.enable_gqa = true; }},
          {"static-shapes", [](Case& c) {
             c.q_len = SymExpr::symbol("s0");
             c.symbols["s0"] = {3, 1, 8};
             c.runtime = {{{"s0", 3}}};
           }}};
}

TEST(DecomposeSdpa, EveryIneligibleFormIsLeftUnchangedWithItsRule) {
  for (const Ineligible& form : ineligible_forms()) {
    Case c = plain();
    form.make(c);
    Graph g = sdpa_entry_graph(c);
    Pass::Result r = DecomposeSdpaPass(Policy::decompose, std::nullopt).run(g, c.shape_env());
    ASSERT_EQ(r.decisions.size(), 1u);
    EXPECT_FALSE(r.decisions[0].rewrite) << form.rule;
    EXPECT_EQ(r.decisions[0].deciding_rule, form.rule);
    EXPECT_EQ(print_graph(r.graph), print_graph(g)) << form.rule;
    // Weakened, the rule lets the form through.
    if (form.rule == "equal-heads" && c.q_heads != c.kv_heads) continue;
    Pass::Result w = DecomposeSdpaPass(Policy::decompose, parse_guard_rule(form.rule)).run(g, c.shape_env());
    EXPECT_TRUE(w.decisions[0].rewrite) << form.rule << ": " << w.decisions[0].deciding_rule;
  }
}

// Rank and leading dims are not expressible as a Case: a hand-written graph.
Graph hand_graph(const SymShape& q, const SymShape& k) {
  Graph g;
  ValueRef a = g.placeholder("q", {DType::f32, q}), b = g.placeholder("k", {DType::f32, k}),
           v = g.placeholder("v", {DType::f32, k});
  SymShape o = q;
  g.outputs = {g.call(kSdpaOp, {a, b, v, None{}, 0.0, false}, {}, {{DType::f32, o}}, "sdpa")};
  return g;
}

TEST(DecomposeSdpa, RankAndLeadingDims) {
  DecomposeSdpaPass pass(Policy::decompose, std::nullopt);
  Pass::Result rank2 = pass.run(hand_graph({4, 8}, {4, 8}), {});
  EXPECT_EQ(rank2.decisions[0].deciding_rule, "rank");
  Pass::Result mixed = pass.run(hand_graph({2, 2, 4, 8}, {2, 4, 8}), {});
  EXPECT_EQ(mixed.decisions[0].deciding_rule, "rank");
  Pass::Result lead = pass.run(hand_graph({2, 2, 4, 8}, {3, 2, 4, 8}), {});
  EXPECT_EQ(lead.decisions[0].deciding_rule, "leading-dims");
  EXPECT_EQ(lead.graph.count(kSdpaOp), 1);
  EXPECT_TRUE(pass.run(hand_graph({2, 2, 4, 8}, {2, 2, 6, 8}), {}).decisions[0].rewrite);
}

TEST(DecomposeSdpa, SharedDecompSplitsSqrtScaleIntoQAndKt) {
  Case c = plain();
  c.batch = {SymExpr(1)};
  c.q_len = c.kv_len = 4;
  c.head_dim = c.value_dim = 16;
  DecomposeSdpaPass shared(Policy::shared_decomp, std::nullopt);
  Graph d = shared.run(sdpa_entry_graph(c), c.shape_env()).graph;
  EXPECT_EQ(d.count("aten.mul.Scalar"), 2);
  EXPECT_EQ(d.count("aten._safe_softmax.default"), 1);
  EXPECT_DOUBLE_EQ(mul_literal(d, 0), 0.5);  // 16^-1/4
  EXPECT_DOUBLE_EQ(mul_literal(d, 1), 0.5);
  c.scale = 0.1234;
  d = shared.run(sdpa_entry_graph(c), c.shape_env()).graph;
  EXPECT_DOUBLE_EQ(mul_literal(d, 0), std::sqrt(0.1234));
  EXPECT_DOUBLE_EQ(mul_literal(d, 1), std::sqrt(0.1234));
  c.scale = -0.5;
  EXPECT_THROW(shared.run(sdpa_entry_graph(c), c.shape_env()), std::domain_error);
  // The decompose policy takes a negative scale as one MUL.
  EXPECT_DOUBLE_EQ(mul_literal(DecomposeSdpaPass(Policy::decompose, std::nullopt)
                                   .run(sdpa_entry_graph(c), c.shape_env()).graph),
                   -0.5);
}

TEST(DecomposeSdpa, PolicyNoneAndNames) {
  Case c = plain();
  Pass::Result r = DecomposeSdpaPass(Policy::none, std::nullopt).run(sdpa_entry_graph(c), c.shape_env());
  EXPECT_TRUE(r.decisions.empty());
  EXPECT_EQ(r.graph.count(kSdpaOp), 1);
  for (Policy p : {Policy::none, Policy::decompose, Policy::decompose_fold, Policy::shared_decomp})
    EXPECT_EQ(parse_policy(policy_name(p)), p);
  EXPECT_FALSE(parse_guard_rule("none"));
  EXPECT_THROW(parse_guard_rule("no-such-rule"), std::exception);
}

}  // namespace
}  // namespace sdpa::cortex_m
