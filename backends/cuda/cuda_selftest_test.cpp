// Campaigns on the cuda target: `replace` is clean, `none` is the backend's
// missing fallback kernel, and each guard rule, weakened alone, has a
// consequence a campaign catches and shrinks.
#include <gtest/gtest.h>


#include "backends/all_targets.h"
#include "backends/target_fixture.h"
#include "backends/cuda/fused_entry.h"
#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "harness/campaign/gate.h"
#include "oracles/dual_oracle.h"
#include "reports/run_summary.h"

namespace sdpa::cuda {
namespace {

struct Fixture : TargetFixture {

  TargetRun campaign(const Options& options, int64_t cases, int64_t stop_after = 0) const {
    auto target = registry.make("cuda", options);
    CampaignOptions o;
    o.seed = 20261130;
    o.cases = cases;
    o.stop_after = stop_after;
    return run_target_campaign(*target, *reference, generators, o);
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

bool small(const Case& c) {
  ConcreteSizes s = concrete_sizes(c, c.runs()[0]);
  return s.batch_numel() <= 2 && s.Hq <= 4 && s.Lq <= 4 && s.Lkv <= 4 && s.E <= 8 && s.Ev <= 8;
}

TEST(CudaReplace, NoUnsoundCrashUnexpectedErrorOrEntryDisagreeIn1000Cases) {
  TargetRun r = fixture().campaign({{"guard", "replace"}}, 1000);
  for (const char* v : {"unsound-rewrite", "crash", "unexpected-error", "entry-disagree", "oracle-disagree",
                        "invalid-rewrite", "broken-invariant", "nan-mismatch", "inaccurate-kernel"})
    EXPECT_EQ(r.verdicts[v], 0) << v << "\n" << run_summary_text({r});
  EXPECT_GT(r.verdicts["pass"], 300) << run_summary_text({r});
  EXPECT_GT(r.guard_rules["outputs-used"], 0) << run_summary_text({r});
}

TEST(CudaNone, EveryFusedCallIsUnsupportedNamingItsOp) {
  TargetRun r = fixture().campaign({{"guard", "none"}, {"entry", "flash"}}, 100);
  EXPECT_EQ(r.verdicts["unsupported"], 100) << run_summary_text({r});
  auto target = fixture().registry.make("cuda", {{"guard", "none"}});
  Case c;
  c.dtype = DType::f16;
  c.batch = {SymExpr(1)};
  c.head_dim = c.value_dim = 8;
  CaseResult one = run_case(*target, *fixture().reference, c);
  ASSERT_EQ(one.verdict, Verdict::unsupported);
  EXPECT_NE(one.primary()->detail.find("missing fallback kernel"), std::string::npos) << one.primary()->detail;
  EXPECT_NE(one.primary()->detail.find("aten._scaled_dot_product_flash_attention.default"), std::string::npos);
}

// A rule weakened inside a cond branch is caught there; the sound guard's
// kept node is checked by forcing it (rejected, not missed).
TEST(CudaCond, AWeakenedRuleInsideABranchIsCaught) {
  auto weak = fixture().registry.make("cuda", {{"guard", "replace"}, {"entry", "flash"}, {"weaken", "causal-lengths"}});
  auto sound = fixture().registry.make("cuda", {{"guard", "replace"}, {"entry", "flash"}});
  Case c;
  c.dtype = DType::f16;
  c.batch = {SymExpr(1)};
  c.q_len = 1;
  c.kv_len = 2;
  c.head_dim = c.value_dim = 8;
  c.is_causal = true;
  c.causal_alignment = CausalAlignment::bottom_right;
  c.variant = kCond;
  CaseResult caught = run_case(*weak, *fixture().reference, c);
  EXPECT_EQ(caught.verdict, Verdict::unsound_rewrite) << verdict_name(caught.verdict);
  EXPECT_EQ(caught.primary()->first_node, "%cond (cond)") << caught.primary()->detail;
  // The sound guard keeps the node, which the backend has no kernel for;
  // forced alone, the rewrite does not refine the entry: not a missed one.
  CaseResult kept = run_case(*sound, *fixture().reference, c);
  EXPECT_EQ(kept.verdict, Verdict::unsupported) << verdict_name(kept.verdict);
  ASSERT_EQ(kept.decisions.size(), 1u);
  EXPECT_FALSE(kept.decisions[0].rewrite);
  EXPECT_FALSE(kept.decisions[0].sound_alone);
}

// The gate from the backend's missing kernel to the replace guard: every
// node the guard rewrites is a sound new rewrite, none is unsound or missed;
// with a rule weakened, the gate names the newly unsound node.
TEST(CudaGate, NoneToReplaceSortsEveryChangedDecision) {
  auto decisions = [](const Options& o) {
    return record_decisions(*fixture().registry.make("cuda", o), *fixture().reference, fixture().generators, 3,
                            400, 100);
  };
  const DecisionsFile none = decisions({{"guard", "none"}, {"entry", "flash"}});
  GateComparison g = compare_decisions(none, decisions({{"guard", "replace"}, {"entry", "flash"}}));
  EXPECT_GT(g.changes[GateClass::newly_rewritten_sound].size(), 50u);
  EXPECT_TRUE(g.changes[GateClass::newly_unsound].empty());
  EXPECT_TRUE(g.changes[GateClass::newly_missed].empty());
  EXPECT_GT(g.unchanged, 0);  // the nodes the guard keeps, as none did
  for (const auto& c : g.changes[GateClass::newly_rewritten_sound])
    EXPECT_EQ(c.head.pass, "replace-fused-sdpa-with-sdpa");

  GateComparison weak =
      compare_decisions(none, decisions({{"guard", "replace"}, {"entry", "flash"}, {"weaken", "causal-lengths"}}));
  ASSERT_FALSE(weak.changes[GateClass::newly_unsound].empty());
  const GateChange* first = smallest(weak.changes[GateClass::newly_unsound]);
  EXPECT_TRUE(first->head.c.is_causal);
  EXPECT_NE(case_summary(first->head.c).find("causal(bottom-right)"), std::string::npos) << case_summary(first->head.c);
}

// A guard rule switched off (option weaken) or a wrong replacement (option
// mutant), the verdict it must be caught with, and a text its finding holds.
struct Weakening {
  std::string rule, entry, verdict;
  std::string option = "weaken", detail = "";
};

void PrintTo(const Weakening& w, std::ostream* os) { *os << w.rule; }

std::string param_name(const ::testing::TestParamInfo<Weakening>& i) {
  std::string n = i.param.rule;
  for (char& ch : n) ch = ch == '-' ? '_' : ch;
  return n;
}

// The first finding of the expected verdict in 2,000 cases, shrunk small.
void expect_caught_and_shrunk(const Weakening& p) {
  TargetRun r = fixture().campaign({{"guard", "replace"}, {p.option, p.rule}, {"entry", p.entry}}, 2000, 1);
  const WrittenFinding* w = nullptr;
  for (const auto& f : r.findings)
    if (!w && f.verdict == p.verdict) w = &f;
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  EXPECT_LT(w->iteration, 2000);
  EXPECT_TRUE(small(w->shrunk)) << case_summary(w->shrunk);
  EXPECT_NE(w->finding.detail.find(p.detail), std::string::npos) << w->finding.detail;
  std::printf("%s %s: %s at case %lld, shrunk in %d steps to %s\n", p.option.c_str(), p.rule.c_str(),
              p.verdict.c_str(), static_cast<long long>(w->iteration), w->shrink_steps,
              case_summary(w->shrunk).c_str());
}

class WeakenedGuard : public ::testing::TestWithParam<Weakening> {};

TEST_P(WeakenedGuard, TheHarnessCatchesTheConsequenceAndShrinksIt) { expect_caught_and_shrunk(GetParam()); }

// A wrong replacement, caught and shrunk as a weakened rule is: the
// invariant that the SDPA node carries the fused call's scale, and
// enable_gqa unless the head counts are statically equal, names it.
class WrongReplacement : public ::testing::TestWithParam<Weakening> {};

TEST_P(WrongReplacement, TheHarnessCatchesItAndShrinksIt) { expect_caught_and_shrunk(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Mutants, WrongReplacement,
    ::testing::Values(Weakening{"replace-drops-scale", "dispatch", "broken-invariant", "mutant", "scale None"},
                      Weakening{"replace-drops-enable-gqa", "dispatch", "broken-invariant", "mutant",
                                "enable_gqa unset"}),
    param_name);

INSTANTIATE_TEST_SUITE_P(
    Rules, WeakenedGuard,
    ::testing::Values(Weakening{"outputs-used", "dispatch", "invalid-rewrite"},
                      Weakening{"causal-bias", "efficient", "invalid-rewrite"},
                      Weakening{"causal-lengths", "flash", "unsound-rewrite"}),
    param_name);

}  // namespace
}  // namespace sdpa::cuda
