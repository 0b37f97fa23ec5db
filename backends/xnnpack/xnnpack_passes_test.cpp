// LiftConstantScalarOperandsPass and ConvertToSDPAPass on each entry
// variant: what each pass matched and rewrote, the upstream scale recovery
// (semantics/cortex-m-and-xnnpack.md §5, properties 16 and 17), and the
// pass-order property.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "backends/all_targets.h"
#include "backends/common/sdpa_entry.h"
#include "backends/xnnpack/convert_to_sdpa_pass.h"
#include "backends/xnnpack/lift_scalars_pass.h"
#include "backends/xnnpack/pattern_entry.h"
#include "backends/xnnpack/test_cases.h"
#include "harness/check/check.h"
#include "oracles/dual_oracle.h"

namespace sdpa::xnnpack {
namespace {

using testing::masked_call;
using testing::with_variant;

double sdpa_scale(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op == kSdpaOp) return std::get<double>(*n.kwarg("scale"));
  ADD_FAILURE() << "no SDPA node";
  return NAN;
}

Graph convert(const Case& c) { return ConvertToSDPAPass().run(pattern_entry_graph(c), c.shape_env()).graph; }

TEST(XnnpackLift, AScalarMulBecomesAMulTensorOfA0DimConstant) {
  Graph g;
  ValueRef x = g.placeholder("x", {DType::f32, {SymExpr(2), SymExpr(3)}});
  ValueRef m = g.call(kMulScalar, {x, 0.5}, {}, {{DType::f32, {SymExpr(2), SymExpr(3)}}});
  g.outputs = {g.call("aten.add.Scalar", {m, 1.0}, {}, {{DType::f32, {SymExpr(2), SymExpr(3)}}})};
  Pass::Result r = LiftConstantScalarOperandsPass().run(g, ShapeEnv());
  EXPECT_EQ(r.graph.count(kMulScalar), 0);
  EXPECT_EQ(r.graph.count(kMulTensor), 1);
  EXPECT_EQ(r.graph.count("aten.add.Scalar"), 1) << "add.Scalar is not in the map";
  ASSERT_EQ(r.graph.constants.count("_tensor_constant_0"), 1u);
  const Tensor& c = r.graph.constants.at("_tensor_constant_0");
  EXPECT_TRUE(c.shape.empty());
  EXPECT_EQ(c.data, std::vector<double>{0.5});
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_TRUE(r.decisions[0].rewrite);
}

TEST(XnnpackLift, KeepsTheMulsThatFeedTheQkBmmThroughCopies) {
  Pass::Result r = LiftConstantScalarOperandsPass().run(pattern_entry_graph(masked_call()), ShapeEnv());
  EXPECT_EQ(r.graph.count(kMulScalar), 2);
  EXPECT_EQ(r.graph.count(kMulTensor), 0);
  ASSERT_EQ(r.decisions.size(), 2u);
  for (const auto& d : r.decisions) {
    EXPECT_FALSE(d.rewrite);
    EXPECT_EQ(d.deciding_rule, "not-feeding-qk-bmm");
  }
}

TEST(XnnpackLift, AClonedMulIsLiftedTheGuardDoesNotSeeThroughClone) {
  Pass::Result r = LiftConstantScalarOperandsPass().run(pattern_entry_graph(with_variant(masked_call(), "qk-clone")),
                                                        ShapeEnv());
  EXPECT_EQ(r.graph.count(kMulScalar), 1);  // k's
  EXPECT_EQ(r.graph.count(kMulTensor), 1);  // q's, behind the clone
}

TEST(XnnpackConvert, RecoversTheUpstreamScaleOfProperty16) {
  EXPECT_EQ(sdpa_scale(convert(masked_call(64))), 0.12499999572143228);
  EXPECT_EQ(sdpa_scale(convert(masked_call(64, DType::f16))), 0.12497329711914062);
  EXPECT_EQ(sdpa_scale(convert(masked_call(16))), 0.25);
  Case negative = masked_call(16);
  negative.scale = -0.25;
  EXPECT_EQ(sdpa_scale(convert(negative)), 0.25) << "squaring loses the sign";
}

// f16, scale 0.12505962218074274: its square root 0.3536376990377903 lies
// 2^-28 above the f16 tie 1448.5 * 2^-12, an f32 value. get_scale and the
// lift round the graph's double literal once, up to 0.353759765625; through
// f32 first it would land on the tie and round to even, 0.353515625.
TEST(XnnpackConvert, AnF16LiteralIsRoundedOnceFromTheDoubleAsUpstreamDoes) {
  Case c = masked_call(16, DType::f16);
  c.scale = 0.12505962218074274;
  const Graph g0 = pattern_entry_graph(c);
  for (const Node& n : g0.nodes) {
    if (n.op == kMulScalar) {
      EXPECT_EQ(std::get<double>(n.args[1]), 0.3536376990377903) << n.name;
    }
  }
  EXPECT_EQ(traced_scale(c), 0.12505961954593658) << "the op math reads the tie, in f32";
  const Graph g1 = convert(c);
  EXPECT_EQ(sdpa_scale(g1), 0.12514597177505493) << "0.353759765625 squared";
  // 0.12514597 is 0.1251220703125 in f16, one step above the call's f16 0.125.
  TargetRegistry registry;
  register_all_targets(registry);
  auto target = registry.make("xnnpack", {{"guard", "none"}});
  auto broken = target->invariants(c, g0, g1);
  ASSERT_EQ(broken.size(), 1u);
  EXPECT_NE(broken[0].find("(0.1251220703125 in f16)"), std::string::npos) << broken[0];
  EXPECT_NE(broken[0].find(": 1 ulp of f16"), std::string::npos) << broken[0];
  // The lift rounds the same literal into q's buffer (the clone hides q's MUL from its guard).
  Pass::Result lifted = LiftConstantScalarOperandsPass().run(pattern_entry_graph(with_variant(c, "qk-clone")),
                                                             c.shape_env());
  ASSERT_EQ(lifted.graph.constants.count("_tensor_constant_0"), 1u);
  const Tensor& buffer = lifted.graph.constants.at("_tensor_constant_0");
  EXPECT_EQ(buffer.dtype, DType::f16);
  EXPECT_EQ(buffer.data, std::vector<double>{0.353759765625});
}

TEST(XnnpackConvert, ReplacesThePatternWithOneSdpaAndRecordsTheDecision) {
  Pass::Result r = ConvertToSDPAPass().run(pattern_entry_graph(masked_call()), ShapeEnv());
  EXPECT_EQ(r.graph.count(kSdpaOp), 1);
  EXPECT_EQ(r.graph.count(kBmm), 0);
  EXPECT_EQ(r.graph.count(kMulScalar), 0);
  EXPECT_EQ(r.graph.nodes.size(), 5u) << "q, k, v, attn_mask and the SDPA";
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_TRUE(r.decisions[0].rewrite);
  EXPECT_EQ(r.decisions[0].rules.size(), 3u);
}

TEST(XnnpackConvert, AMatchedMaskOfRankOtherThan2RaisesAndTheCaseIsUnsupported) {
  Case c = masked_call();
  c.mask->shape = {SymExpr(1), SymExpr(2), SymExpr(3), SymExpr(4)};
  try {
    convert(c);
    FAIL();
  } catch (const PassUnsupported& e) {
    EXPECT_NE(std::string(e.what()).find("Mask rank is not 2"), std::string::npos) << e.what();
  }
  TargetRegistry registry;
  register_all_targets(registry);
  auto reference = make_dual_oracle();
  for (const char* guard : {"none", "lift"}) {
    CaseResult r = run_case(*registry.make("xnnpack", {{"guard", guard}}), *reference, c);
    ASSERT_EQ(r.verdict, Verdict::unsupported) << guard;
    EXPECT_NE(r.primary()->detail.find("pass ConvertToSDPAPass raised: Mask rank is not 2"), std::string::npos)
        << r.primary()->detail;
  }
  // The scores variant traces no pattern: nothing matches, nothing raises.
  EXPECT_NE(run_case(*registry.make("xnnpack", {}), *reference, with_variant(c, "scores")).verdict,
            Verdict::unsupported);
}

// What the two passes do with each variant, reported per variant.
TEST(XnnpackPasses, WhatEachVariantKeepsLiftsAndConverts) {
  struct Expect {
    int muls_kept, muls_lifted, converted;
  };
  const std::map<std::string, Expect> expected = {
      {"qk", {2, 0, 1}},         {"qk-no-expand", {2, 0, 0}}, {"q", {1, 0, 0}},          {"scores", {0, 1, 0}},
      {"qk-clone", {1, 1, 0}},   {"qk-transpose", {1, 1, 0}}, {"qk-to-copy", {1, 1, 0}},
      {"qk-safe-softmax-decomposed", {2, 0, 1}},
  };
  for (const auto& v : pattern_variants()) {
    const Case c = with_variant(masked_call(), v.name);
    const Graph g0 = pattern_entry_graph(c);
    Pass::Result lifted = LiftConstantScalarOperandsPass().run(g0, c.shape_env());
    Pass::Result converted = ConvertToSDPAPass().run(lifted.graph, c.shape_env());
    int kept = 0, lifted_n = 0;
    for (const auto& d : lifted.decisions) (d.rewrite ? lifted_n : kept) += 1;
    const size_t before = match_sdpa_pattern(g0).size();
    std::printf("%-26s matched before lift %zu, after %zu; MULs kept %d, lifted %d; SDPA %d\n", v.name.c_str(), before,
                match_sdpa_pattern(lifted.graph).size(), kept, lifted_n, converted.graph.count(kSdpaOp));
    const Expect& e = expected.at(v.name);
    EXPECT_EQ(kept, e.muls_kept) << v.name;
    EXPECT_EQ(lifted_n, e.muls_lifted) << v.name;
    EXPECT_EQ(converted.graph.count(kSdpaOp), e.converted) << v.name;
    EXPECT_EQ(static_cast<int>(before), e.converted) << v.name << ": the upstream lift never breaks a match";
  }
}

// The pattern graphs are traced by the PyTorch that traces the model, so a
// decomposed _safe_softmax is in both (semantics §3.1, UNVERIFIED which
// form upstream's PyTorch leaves): the pattern matches its own form, and the
// row guard's six nodes run on portable kernels where no SDPA replaces them.
TEST(XnnpackPasses, TheDecomposedSafeSoftmaxMatchesItsOwnFormAndItsGuardIsPortable) {
  const Case c = with_variant(masked_call(16), "qk-safe-softmax-decomposed");
  const Graph g0 = pattern_entry_graph(c);
  EXPECT_EQ(g0.count(kSafeSoftmax), 0);
  EXPECT_EQ(g0.count(kSoftmax), 1);
  EXPECT_EQ(g0.count(kLogicalNot), 2);
  ASSERT_EQ(match_sdpa_pattern(g0).size(), 1u);
  const size_t safe_nodes = match_sdpa_pattern(pattern_entry_graph(masked_call(16)))[0].nodes.size();
  EXPECT_EQ(match_sdpa_pattern(g0)[0].nodes.size(), safe_nodes + 6) << "the guard's six nodes are matched too";
  const Graph g1 = convert(c);
  EXPECT_EQ(g1.count(kSdpaOp), 1);
  EXPECT_EQ(g1.nodes.size(), 5u) << "q, k, v, attn_mask and the SDPA: the guard went with the pattern";
  EXPECT_EQ(sdpa_scale(g1), 0.25);
  // A guard that reads another value than the scores is not the pattern.
  Graph wrong = g0;
  for (Node& n : wrong.nodes)
    if (n.op == kEqScalar) n.args[0] = ValueRef{wrong.find("q"), 0};
  EXPECT_EQ(match_sdpa_pattern(wrong).size(), 0u);
  // Unconverted (no mask: the pattern adds one), the counters see the guard
  // on portable kernels and XNNPACK's softmax delegated.
  TargetRegistry registry;
  register_all_targets(registry);
  auto target = registry.make("xnnpack", {});
  Case unmasked = masked_call(16);
  unmasked.mask.reset();
  CaseResult safe = run_case(*target, *make_dual_oracle(), unmasked);
  CaseResult decomposed = run_case(*target, *make_dual_oracle(), with_variant(unmasked, "qk-safe-softmax-decomposed"));
  ASSERT_EQ(decomposed.counters.at("converted to SDPA"), 0);
  EXPECT_EQ(decomposed.counters.at("delegated nodes"), safe.counters.at("delegated nodes"));
  EXPECT_EQ(decomposed.counters.at("delegated nodes"), 3) << "two bmm and _softmax";
  EXPECT_EQ(decomposed.counters.at("portable nodes"), safe.counters.at("portable nodes") + 6)
      << "eq.Scalar, two logical_not, any.dim, full_like, where.self";
  EXPECT_EQ(decomposed.verdict, safe.verdict);
}

TEST(XnnpackPasses, AnUnguardedLiftBreaksThePatternAndTheInvariantSaysSo) {
  TargetRegistry registry;
  register_all_targets(registry);
  auto target = registry.make("xnnpack", {{"mutant", "lift-unguarded"}});
  const Case c = masked_call(16);
  const Graph g0 = target->entry(c);
  Graph g = g0;
  for (const Pass* p : target->passes()) g = p->run(g, c.shape_env()).graph;
  EXPECT_EQ(g.count(kSdpaOp), 0);
  auto broken = target->invariants(c, g0, g);
  ASSERT_EQ(broken.size(), 1u);
  EXPECT_NE(broken[0].find("pass order"), std::string::npos) << broken[0];
  // The guarded lift keeps the pattern: no invariant broken for E = 16.
  auto sound = registry.make("xnnpack", {});
  Graph h = g0;
  for (const Pass* p : sound->passes()) h = p->run(h, c.shape_env()).graph;
  EXPECT_TRUE(sound->invariants(c, g0, h).empty()) << sound->invariants(c, g0, h)[0];
}

// PR #20515 at 257ef3a853 (review moved the SDPA logic out of the lift):
// the lift takes the scale MULs too, and ConvertToSDPAPass, matching the
// lifted pattern copy as well, still converts the pattern, reading the
// scale from the 0-dim constant: the same scale as from the literal.
TEST(XnnpackPasses, TheLiftAt257ef3a853TakesTheScaleMulsAndTheLiftedPatternIsStillConverted) {
  TargetRegistry registry;
  register_all_targets(registry);
  auto late = registry.make("xnnpack", {{"guard", "lift-257ef3a853"}});
  auto on_main = registry.make("xnnpack", {{"guard", "none"}});
  for (DType t : {DType::f32, DType::f16}) {
    const Case c = masked_call(64, t);  // sqrt(1/8) is in neither dtype: both recoveries round it
    const Graph g0 = late->entry(c);
    const std::vector<const Pass*> passes = late->passes();
    ASSERT_EQ(passes.size(), 2u);
    Pass::Result lifted = passes[0]->run(g0, c.shape_env());
    EXPECT_EQ(lifted.graph.count(kMulScalar), 0);
    EXPECT_EQ(lifted.graph.count(kMulTensor), 2) << "no _feeds_sdpa_qk_bmm guard";
    EXPECT_EQ(match_sdpa_pattern(lifted.graph).size(), 0u) << "the traced pattern no longer matches";
    ASSERT_EQ(match_sdpa_pattern(lifted.graph, PatternForms::scalar_and_lifted).size(), 1u);
    EXPECT_TRUE(match_sdpa_pattern(lifted.graph, PatternForms::scalar_and_lifted)[0].lifted);
    const Graph g1 = passes[1]->run(lifted.graph, c.shape_env()).graph;
    ASSERT_EQ(g1.count(kSdpaOp), 1);
    EXPECT_EQ(g1.count("get_attr"), 0) << "the lifted constants went with the pattern";
    EXPECT_EQ(sdpa_scale(g1), sdpa_scale(convert(c))) << dtype_name(t);
    // No pass-order break; the recovered scale's ulps as on main.
    EXPECT_EQ(late->invariants(c, g0, g1), on_main->invariants(c, g0, convert(c))) << dtype_name(t);
  }
}

// get_scale reads the first MUL whose operand is a float. On main a first
// MUL with an int literal ends the search (break: no scale); at 257ef3a853
// the loop goes on to k's MUL.
TEST(XnnpackPasses, AnIntLiteralEndsMainsScaleSearchAndIsPassedOverAt257ef3a853) {
  const Case c = masked_call(16);
  Graph g = pattern_entry_graph(c);
  const std::vector<SdpaPatternMatch> m = match_sdpa_pattern(g);
  ASSERT_EQ(m.size(), 1u);
  g.nodes[m[0].scale_muls[0]].args[1] = int64_t{2};
  const SdpaPatternMatch again = match_sdpa_pattern(g).at(0);
  EXPECT_FALSE(recover_scale(g, again, ScaleRecovery::upstream).has_value());
  const std::optional<double> late =
      recover_scale(g, again, ScaleRecovery::upstream, PatternForms::scalar_and_lifted);
  ASSERT_TRUE(late.has_value());
  EXPECT_EQ(*late, 0.25) << "k's literal 0.5, squared";
  EXPECT_THROW(ConvertToSDPAPass().run(g, c.shape_env()), ConvertToSdpaError);
  EXPECT_EQ(sdpa_scale(ConvertToSDPAPass(ScaleRecovery::upstream, PatternForms::scalar_and_lifted)
                           .run(g, c.shape_env())
                           .graph),
            0.25);
}

// The lifted pattern copy as SubgraphMatcher(ignore_literals=True) takes
// it: a get_attr tensor of any shape in a MUL's operand, or a literal; a
// constant both MULs read is one target node matched twice, which it
// refuses. get_scale then reads a one-element constant, and passes over a
// larger one and a literal (none left: "Could not find scale").
TEST(XnnpackPasses, TheLiftedPatternTakesAnyConstantTensorOrALiteralAndGetScaleReadsOneElement) {
  const Case c = masked_call(16);
  const Graph lifted = LiftConstantScalarOperandsPass(false).run(pattern_entry_graph(c), c.shape_env()).graph;
  const auto forms = PatternForms::scalar_and_lifted;
  const ConvertToSDPAPass late(ScaleRecovery::upstream, forms);
  ASSERT_EQ(match_sdpa_pattern(lifted, forms).size(), 1u);
  const std::vector<int> muls = match_sdpa_pattern(lifted, forms)[0].scale_muls;
  // MUL `mul`'s constant (and its node's shape) set to `value`.
  const auto set_constant = [&](Graph& g, int mul, const Tensor& value) {
    const ValueRef c = std::get<ValueRef>(g.nodes[mul].args[1]);
    g.constants.at(std::get<std::string>(g.nodes[c.node].args[0])) = value;
    g.nodes[c.node].outputs[0].shape.assign(value.shape.begin(), value.shape.end());
  };
  // q's constant of shape [1]: matched, and its item() read.
  Graph one = lifted;
  set_constant(one, muls[0], Tensor(DType::f32, {1}, 0.5));
  ASSERT_EQ(match_sdpa_pattern(one, forms).size(), 1u);
  EXPECT_EQ(recover_scale(one, match_sdpa_pattern(one, forms)[0], ScaleRecovery::upstream, forms), 0.25);
  // q's of two elements: matched, passed over; k's read.
  Graph two = lifted;
  set_constant(two, muls[0], Tensor(DType::f32, {2}, 3.0));
  ASSERT_EQ(match_sdpa_pattern(two, forms).size(), 1u);
  EXPECT_EQ(recover_scale(two, match_sdpa_pattern(two, forms)[0], ScaleRecovery::upstream, forms), 0.25);
  // Both MULs of literals: matched, and no scale found.
  Graph literals = lifted;
  for (int mul : muls) literals.nodes[mul].args[1] = 0.5;
  ASSERT_EQ(match_sdpa_pattern(literals, forms).size(), 1u);
  EXPECT_THROW(late.run(literals, c.shape_env()), ConvertToSdpaError);
  // One constant read by both MULs: no match.
  Graph shared = lifted;
  shared.nodes[muls[1]].args[1] = shared.nodes[muls[0]].args[1];
  EXPECT_EQ(match_sdpa_pattern(shared, forms).size(), 0u);
}

TEST(XnnpackPasses, TheRecoveredScaleIsComparedWithTheCallsInUlpsAndSign) {
  TargetRegistry registry;
  register_all_targets(registry);
  auto target = registry.make("xnnpack", {});
  const Case c = masked_call(64);  // 0.12499999572143228 rounds to 0x3DFFFFFF: 1 ulp below 0.125
  const Graph g0 = target->entry(c);
  auto broken = target->invariants(c, g0, convert(c));
  ASSERT_EQ(broken.size(), 1u);
  EXPECT_NE(broken[0].find("-1 ulp of f32"), std::string::npos) << broken[0];
  Case negative = masked_call(16);
  negative.scale = -0.25;
  broken = target->invariants(negative, target->entry(negative), convert(negative));
  ASSERT_EQ(broken.size(), 1u);
  EXPECT_NE(broken[0].find("sign lost"), std::string::npos) << broken[0];
}

}  // namespace
}  // namespace sdpa::xnnpack
