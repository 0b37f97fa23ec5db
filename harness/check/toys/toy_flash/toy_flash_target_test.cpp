// The flash toy: the entry's bottom-right causal mask is what the oracles
// compute; the guarded pass is clean; the unguarded one is caught and shrunk
// to a call where the two alignments differ; a case that says top-left for
// this entry is a bad file.
#include <gtest/gtest.h>

#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "harness/campaign/explain.h"
#include "harness/campaign/gate.h"
#include "harness/check/toys/toy_targets.h"
#include "harness/io/json_reader.h"
#include "oracles/dual_oracle.h"

namespace sdpa::toy_flash {
namespace {

struct Fixture {
  TargetRegistry registry;
  std::unique_ptr<ReferenceModel> reference = make_dual_oracle();
  Fixture() { register_toy_targets(registry); }

  TargetRun campaign(const Options& options, int64_t cases) const {
    auto target = registry.make("toy-flash", options);
    CampaignOptions o;
    o.seed = 20261130;
    o.cases = cases;
    return run_target_campaign(*target, *reference,
                               [](const CaseSpace& s) { return gen_case(GenPolicy::defaults(), s); }, o);
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

Case causal_call(int64_t Lq, int64_t Lkv, CausalAlignment a) {
  Case c;
  c.batch = {SymExpr(1)};
  c.q_len = Lq;
  c.kv_len = Lkv;
  c.head_dim = c.value_dim = 4;
  c.is_causal = true;
  c.causal_alignment = a;
  c.data.seed = 3;
  return c;
}

TEST(ToyFlash, TheOraclesHonourBottomRight) {
  // Lq 2, Lkv 4: bottom-right row 0 keeps keys {0, 1, 2}, top-left only {0}.
  auto target = fixture().registry.make("toy-flash", {{"guard", "guarded"}});
  CaseResult ok = run_case(*target, *fixture().reference, causal_call(2, 4, CausalAlignment::bottom_right));
  EXPECT_EQ(ok.verdict, Verdict::rejected);  // kept by the guard, the entry matches its oracle
  try {
    run_case(*target, *fixture().reference, causal_call(2, 4, CausalAlignment::top_left));
    FAIL() << "a top-left causal call is not what this entry form takes";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("case.causal_alignment"), std::string::npos) << e.what();
  }
}

TEST(ToyFlash, TheGuardedPassIsClean) {
  TargetRun r = fixture().campaign({{"guard", "guarded"}}, 300);
  EXPECT_GT(r.verdicts["pass"], 50);
  EXPECT_GT(r.verdicts["rejected"], 0);
  for (const auto& [verdict, n] : r.verdicts)
    if (is_failure(*parse_verdict(verdict))) ADD_FAILURE() << verdict << ": " << n;
}

TEST(ToyFlash, TheUnguardedPassIsCaughtAndShrunk) {
  TargetRun r = fixture().campaign({{"guard", "unguarded"}}, 500);
  const WrittenFinding* w = nullptr;
  for (const auto& f : r.findings)
    if (f.verdict == "unsound-rewrite") w = &f;
  ASSERT_NE(w, nullptr);
  ConcreteSizes s = concrete_sizes(w->shrunk, w->shrunk.runs()[0]);
  EXPECT_TRUE(w->shrunk.is_causal);
  EXPECT_NE(s.Lq, s.Lkv);
  EXPECT_LE(s.Lq + s.Lkv, 3) << case_summary(w->shrunk);  // Lq 1, Lkv 2 or Lq 2, Lkv 1
}

// Causal bottom-right with Lq = s0 and Lkv = s1 independent in [1, 8],
// run only where they are equal: there top-left and bottom-right agree.
Case equal_at_runtime() {
  Case c = causal_call(1, 1, CausalAlignment::bottom_right);
  c.q_len = SymExpr::symbol("s0");
  c.kv_len = SymExpr::symbol("s1");
  c.symbols = {{"s0", {3, 1, 8}}, {"s1", {3, 1, 8}}};
  c.runtime = {{{"s0", 3}, {"s1", 3}}, {{"s0", 5}, {"s1", 5}}};
  return c;
}

constexpr const char* kRefuted = "s0 = 1, s1 = 3 (the min of s0; Lq 1, Lkv 3)";

// The guard keeps the node (Lq == Lkv is not statically known); forced, the
// top-left rewrite refines the entry at both runtime sizes, but not at
// s0 = 1, a size in range no runtime entry tried: a right rejection, not a
// missed rewrite, and the size that broke it is named.
TEST(ToyFlashProof, AForcedRewriteSoundOnlyAtTheRuntimeSizesIsRejectedWithTheSizeThatBreaksIt) {
  auto target = fixture().registry.make("toy-flash", {{"guard", "guarded"}});
  CaseResult r = run_case(*target, *fixture().reference, equal_at_runtime());
  EXPECT_EQ(r.verdict, Verdict::rejected);
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_FALSE(r.decisions[0].rewrite);
  EXPECT_FALSE(r.decisions[0].sound_alone);
  EXPECT_EQ(r.decisions[0].refuted_at, kRefuted);
  // Deterministic: the same case gives the same proof.
  EXPECT_EQ(run_case(*target, *fixture().reference, equal_at_runtime()).decisions[0].refuted_at, kRefuted);
  // explain names it beside the decision.
  CorpusEntry e;
  e.target = "toy-flash";
  e.options = target->options();
  e.expect = "rejected";
  e.c = equal_at_runtime();
  const std::string text = explain_entry(e, fixture().registry, *fixture().reference);
  EXPECT_NE(text.find(std::string("its forced rewrite refines the entry graph at every runtime size but not at ") +
                      kRefuted + ": the guard is right to keep it"),
            std::string::npos)
      << text;
}

// The gate's newly-missed class uses the same proof: unguarded -> guarded
// on that case was "newly missed" while only the runtime sizes counted;
// with the proof the unguarded rewrite is unsound (at s0 = 1) and the
// guarded keep fixes it. A case whose lengths are statically equal stays
// unchanged (sound rewrite in both).
TEST(ToyFlashProof, TheGateSortsARewriteUnsoundAtAnUntriedSizeAsFixedNotNewlyMissed) {
  DecisionsFile sample;
  sample.target = "toy-flash";
  GateDecision d;
  d.c = equal_at_runtime();
  sample.decisions.push_back(d);
  d.index = 1;
  d.c.kv_len = d.c.q_len;
  d.c.symbols.erase("s1");
  d.c.runtime = {{{"s0", 3}}};
  sample.decisions.push_back(d);
  auto base = fixture().registry.make("toy-flash", {{"guard", "unguarded"}});
  auto head = fixture().registry.make("toy-flash", {{"guard", "guarded"}});
  const DecisionsFile b = record_decisions_on(*base, *fixture().reference, sample);
  const DecisionsFile h = record_decisions_on(*head, *fixture().reference, sample);
  ASSERT_EQ(b.decisions.size(), 2u);
  EXPECT_TRUE(b.decisions[0].rewrite);
  EXPECT_EQ(b.decisions[0].verdict, "pass") << "the unguarded rewrite passes at the runtime sizes";
  EXPECT_FALSE(b.decisions[0].sound);
  EXPECT_EQ(b.decisions[0].refuted_at, kRefuted);
  EXPECT_FALSE(h.decisions[0].sound);
  EXPECT_EQ(h.decisions[0].refuted_at, kRefuted);
  GateComparison g = compare_decisions(b, h);
  EXPECT_TRUE(g.changes[GateClass::newly_missed].empty());
  ASSERT_EQ(g.changes[GateClass::unsound_fixed].size(), 1u);
  EXPECT_EQ(g.changes[GateClass::unsound_fixed][0].head.index, 0);
  EXPECT_EQ(g.unchanged, 1);
  EXPECT_EQ(g.base_refuted, 1);
  EXPECT_EQ(g.head_refuted, 1);
  // The refutation travels through a decisions file.
  EXPECT_EQ(decisions_from_json(decisions_to_json(h), "h.json").decisions[0].refuted_at, kRefuted);
}

}  // namespace
}  // namespace sdpa::toy_flash
