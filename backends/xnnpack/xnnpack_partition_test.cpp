// The delegates the partitioner leaves and ConvertToSDPAPass run on each
// of them (upstream's default flow, semantics §3.2): the scale MULs are not
// delegated, so no delegate ever holds the pattern whole; and the
// target's flow=upstream, end to end.
#include "backends/xnnpack/xnnpack_partition.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "backends/all_targets.h"
#include "backends/target_fixture.h"
#include "backends/common/sdpa_entry.h"
#include "backends/xnnpack/convert_to_sdpa_pass.h"
#include "backends/xnnpack/lift_scalars_pass.h"
#include "backends/xnnpack/pattern_entry.h"
#include "backends/xnnpack/test_cases.h"
#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "harness/check/check.h"
#include "oracles/dual_oracle.h"
#include "reports/run_summary.h"

namespace sdpa::xnnpack {
namespace {

using testing::masked_call;

using Fixture = TargetFixture;

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

Delegates everything() {
  return [](const Node&) { return true; };
}

// f32 q, k, v [1, 2, 4, 64] and an additive mask [4, 4].
Case review_call() {
  Case c = masked_call(64);
  c.q_len = 4;
  c.mask->shape = {SymExpr(4), SymExpr(4)};
  return c;
}

TEST(XnnpackPartition, EachBmmAndTheSoftmaxIsADelegateOfItsOwnAndTheMulsAreNot) {
  const Graph g = pattern_entry_graph(masked_call());
  const Partitions p = partition(g, kernel_set_delegates());
  EXPECT_EQ(p.count, 3) << "the two bmm and _safe_softmax, between portable view_copy nodes";
  int muls = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].op == kMulScalar) {
      ++muls;
      EXPECT_EQ(p.of_node[i], -1) << g.nodes[i].name;
    }
    if (g.nodes[i].op == "placeholder") {
      EXPECT_EQ(p.of_node[i], -1);
    }
  }
  EXPECT_EQ(muls, 2);
  // Taking every node makes one delegate of the whole graph.
  EXPECT_EQ(partition(g, everything()).count, 1);
}

TEST(XnnpackPartition, PerDelegateTheTracedPatternSpansDelegatesAndIsKept) {
  const Case c = masked_call();
  const Graph g = pattern_entry_graph(c);
  Pass::Result r = ConvertToSDPAPass(ScaleRecovery::upstream, kernel_set_delegates()).run(g, c.shape_env());
  EXPECT_EQ(r.graph.count(kSdpaOp), 0);
  EXPECT_EQ(r.graph.count(kMulScalar), 2);
  ASSERT_EQ(r.decisions.size(), 1u);
  const Decision& d = r.decisions[0];
  EXPECT_FALSE(d.rewrite);
  EXPECT_EQ(d.deciding_rule, "inside-one-delegate");
  const std::string detail = d.rules.back().detail;
  EXPECT_NE(detail.find("%mul (aten.mul.Scalar)"), std::string::npos) << detail;
  EXPECT_NE(detail.find("3 delegate(s)"), std::string::npos) << detail;
  // Forcing it converts a node no delegate lowers.
  RewriteControl force;
  force.force_all = true;
  try {
    ConvertToSDPAPass(ScaleRecovery::upstream, kernel_set_delegates()).run(g, c.shape_env(), force);
    FAIL();
  } catch (const PassUnsupported& e) {
    EXPECT_EQ(std::string(e.what()), kNoSdpaVisitor);
  }
}

TEST(XnnpackPartition, AMatchInsideOneDelegateIsConvertedAndHasNoNodeVisitor) {
  const Case c = masked_call();
  try {
    ConvertToSDPAPass(ScaleRecovery::upstream, everything()).run(pattern_entry_graph(c), c.shape_env());
    FAIL() << "a delegate that held mul.Scalar would hold the whole pattern";
  } catch (const PassUnsupported& e) {
    EXPECT_EQ(std::string(e.what()), kNoSdpaVisitor);
  }
}

// A lifted match's constants are read by its delegated MULs, so they go
// into that delegate with them: the match is inside one delegate.
TEST(XnnpackPartition, ALiftedMatchWithItsConstantsIsInsideOneDelegate) {
  const Case c = masked_call();
  const Graph lifted = LiftConstantScalarOperandsPass(false).run(pattern_entry_graph(c), c.shape_env()).graph;
  ASSERT_EQ(lifted.count("get_attr"), 2);
  try {
    ConvertToSDPAPass(ScaleRecovery::upstream, everything(), PatternForms::scalar_and_lifted)
        .run(lifted, c.shape_env());
    FAIL() << "every node of the lifted match is delegated, its constants with it";
  } catch (const PassUnsupported& e) {
    EXPECT_EQ(std::string(e.what()), kNoSdpaVisitor);
  }
}

// Under flow=upstream the pass-order property counts the matches the
// graph still holds after the passes: at 257ef3a853 those are lifted
// copies, which ConvertToSDPAPass matches too. No traced graph keeps a
// match past RemoveNoopExpandCopyPass (the expands of q and of the
// weights are no-ops), so here every expand's input is declared one head
// wide: each broadcasts, and the match stays.
TEST(XnnpackUpstreamFlow, ALiftedMatchLeftUnconvertedKeepsThePassOrderAt257ef3a853) {
  auto late = fixture().registry.make("xnnpack", {{"flow", "upstream"}, {"guard", "lift-257ef3a853"}});
  const Case c = masked_call(16);
  Graph g0 = late->entry(c);
  const SdpaPatternMatch traced = match_sdpa_pattern(g0).at(0);
  for (int n : traced.nodes)
    if (g0.nodes[n].op == kExpandCopy) {
      const ValueRef in = std::get<ValueRef>(g0.nodes[n].args[0]);
      g0.nodes[in.node].outputs[in.output].shape[1] = SymExpr(1);
    }
  Graph g = g0;
  for (const Pass* p : late->passes()) g = p->run(g, c.shape_env()).graph;
  ASSERT_EQ(match_sdpa_pattern(g, PatternForms::scalar_and_lifted).size(), 1u) << "lifted, kept, not converted";
  EXPECT_EQ(g.count(kSdpaOp), 0);
  EXPECT_TRUE(late->invariants(c, g0, g).empty()) << late->invariants(c, g0, g)[0];
}

// At 257ef3a853 the lift takes the scale MULs too: upstream they run on
// XNNPACK as mul.Tensor with sqrt(scale) rounded to the graph dtype, where
// the guarded lift leaves mul.Scalar reading it as a float. In f16 the
// checker names the rounding, which the guard had kept out; in f32 the
// call stays sound. Still no delegate holds the pattern (its no-op expands
// are gone).
TEST(XnnpackUpstreamFlow, TheLiftAt257ef3a853DelegatesTheScaleMulsAndRoundsTheScaleInF16) {
  auto late = fixture().registry.make("xnnpack", {{"flow", "upstream"}, {"guard", "lift-257ef3a853"}});
  auto guarded = fixture().registry.make("xnnpack", {{"flow", "upstream"}, {"guard", "lift"}});
  Case c = review_call();
  c.dtype = DType::f16;
  c.mask->dtype = DType::f16;
  const Graph g0 = late->entry(c);
  Graph g = g0;
  for (const Pass* p : late->passes()) g = p->run(g, c.shape_env()).graph;
  EXPECT_EQ(g.count(kSdpaOp), 0);
  EXPECT_EQ(g.count(kMulScalar), 0);
  ASSERT_EQ(g.count(kMulTensor), 2);
  const Partitions parts = partition(g, kernel_set_delegates());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].op == kMulTensor) EXPECT_GE(parts.of_node[i], 0) << "%" << g.nodes[i].name << " is delegated";
  const CaseResult r = run_case(*late, *fixture().reference, c);
  EXPECT_EQ(r.verdict, Verdict::rounded_constant) << (r.primary() ? r.primary()->detail : "");
  EXPECT_EQ(r.counters.at("converted to SDPA"), 0);
  // The guard kept both MULs, and the completeness proof finds their forced lift unsound.
  EXPECT_EQ(run_case(*guarded, *fixture().reference, c).verdict, Verdict::rejected);
  Case f32 = review_call();
  EXPECT_EQ(run_case(*late, *fixture().reference, f32).verdict, Verdict::pass);
}

TEST(XnnpackUpstreamFlow, ThePatternNeverReachesOneDelegate) {
  auto target = fixture().registry.make("xnnpack", {{"flow", "upstream"}, {"guard", "lift"}});
  const Case c = review_call();
  const Graph g0 = target->entry(c);
  ASSERT_EQ(match_sdpa_pattern(g0).size(), 1u) << "the traced graph holds the pattern";
  Graph g = g0;
  std::vector<Decision> decisions;
  for (const Pass* p : target->passes()) {
    Pass::Result r = p->run(g, c.shape_env());
    g = std::move(r.graph);
    for (auto& d : r.decisions) d.pass = p->name(), decisions.push_back(d);
  }
  EXPECT_EQ(g.count(kSdpaOp), 0);
  EXPECT_EQ(g.count(kMulScalar), 2);
  EXPECT_EQ(g.count(kMulTensor), 0);
  // The lift keeps %mul as mul.Scalar, which no delegate takes.
  const Decision* mul = nullptr;
  for (const auto& d : decisions)
    if (d.node == "%mul") mul = &d;
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->pass, "LiftConstantScalarOperandsPass");
  EXPECT_FALSE(mul->rewrite);
  EXPECT_EQ(mul->deciding_rule, "not-feeding-qk-bmm");
  const int at = g.find("mul");
  ASSERT_GE(at, 0);
  EXPECT_EQ(g.nodes[at].op, kMulScalar);
  EXPECT_EQ(partition(g, kernel_set_delegates()).of_node[at], -1);
  for (const auto& d : decisions) EXPECT_NE(d.pass, "ConvertToSDPAPass") << "no match is left to decide on";
  EXPECT_TRUE(target->invariants(c, g0, g).empty()) << target->invariants(c, g0, g)[0];
  // End to end: sound, and counted.
  CaseResult r = run_case(*target, *fixture().reference, c);
  for (Verdict bad : {Verdict::unsound_rewrite, Verdict::unsupported, Verdict::unexpected_error, Verdict::crash})
    EXPECT_NE(r.verdict, bad) << (r.primary() ? r.primary()->detail : "");
  EXPECT_EQ(r.counters.at("patterns traced"), 1);
  EXPECT_EQ(r.counters.at("patterns after RemoveNoopExpandCopyPass"), 0);
  EXPECT_EQ(r.counters.at("converted to SDPA"), 0);
  // The same call in the pattern-graph flow is converted.
  auto design = fixture().registry.make("xnnpack", {{"guard", "lift"}});
  EXPECT_EQ(run_case(*design, *fixture().reference, c).counters.at("converted to SDPA"), 1);
}

TEST(XnnpackUpstreamFlow, NothingIsConvertedIn300CasesOfEveryVariant) {
  auto target = fixture().registry.make("xnnpack", {{"flow", "upstream"}});
  CampaignOptions o;
  o.seed = 20261130;
  o.cases = 300;
  o.on_case = [](const Case& c, const CaseResult& r) {
    for (const auto& d : r.decisions) EXPECT_NE(d.pass, "ConvertToSDPAPass") << case_summary(c);
  };
  TargetRun r = run_target_campaign(*target, *fixture().reference,
                                    [](const CaseSpace& s) { return gen_case(GenPolicy::defaults(), s); }, o);
  std::printf("%s", run_summary_text({r}).c_str());
  for (const char* v : {"crash", "unexpected-error", "entry-disagree", "oracle-disagree", "unsound-rewrite"})
    EXPECT_EQ(r.verdicts[v], 0) << v << "\n" << run_summary_text({r});
  int64_t traced = 0;
  for (const auto& [name, v] : r.variants) {
    EXPECT_EQ(v.counters.at("converted to SDPA"), 0) << name;
    EXPECT_EQ(v.counters.at("patterns after RemoveNoopExpandCopyPass"), 0) << name;
    traced += v.counters.at("patterns traced");
  }
  EXPECT_GT(traced, 0);
}

TEST(XnnpackUpstreamFlow, AMutantThatRemovesABroadcastingExpandIsCaughtAndShrunk) {
  auto target = fixture().registry.make("xnnpack", {{"flow", "upstream"}, {"mutant", "noop-expand-unchecked"}});
  CampaignOptions o;
  o.seed = 20261130;
  o.cases = 300;
  TargetRun r = run_target_campaign(*target, *fixture().reference,
                                    [](const CaseSpace& s) { return gen_case(GenPolicy::defaults(), s); }, o);
  const WrittenFinding* w = nullptr;
  for (const auto& f : r.findings)
    if (!w && f.verdict == "invalid-rewrite") w = &f;
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  EXPECT_EQ(w->shrunk.kv_heads, 1) << case_summary(w->shrunk);
  ConcreteSizes s = concrete_sizes(w->shrunk, w->shrunk.runs()[0]);
  EXPECT_LE(s.Hq, 2) << case_summary(w->shrunk);
  EXPECT_LE(s.Lq * s.Lkv * s.E, 8) << case_summary(w->shrunk);
  std::printf("noop-expand-unchecked: %s at case %lld, shrunk in %d steps to %s\n  %s\n", w->verdict.c_str(),
              static_cast<long long>(w->iteration), w->shrink_steps, case_summary(w->shrunk).c_str(),
              w->finding.detail.c_str());
}

}  // namespace
}  // namespace sdpa::xnnpack
