// The flash toy: the entry's bottom-right causal mask is what the oracles
// compute; the guarded pass is clean; the unguarded one is caught and shrunk
// to a call where the two alignments differ; a case that says top-left for
// this entry is a bad file.
#include <gtest/gtest.h>

#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
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

}  // namespace
}  // namespace sdpa::toy_flash
