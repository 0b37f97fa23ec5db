// Campaigns on the xnnpack target: the default options never crash or
// disagree with the oracles; get_scale's lost sign (in the pattern-graph
// flow) and each mutant are caught and shrunk; what the passes do is
// counted per variant.
#include <gtest/gtest.h>

#include <cstdio>

#include "backends/all_targets.h"
#include "backends/target_fixture.h"
#include "backends/common/sdpa_entry.h"
#include "backends/xnnpack/test_cases.h"
#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "oracles/dual_oracle.h"
#include "reports/run_summary.h"

namespace sdpa::xnnpack {
namespace {

struct Fixture : TargetFixture {

  TargetRun campaign(const Options& options, int64_t cases, const GenPolicy& p = GenPolicy::defaults(),
                     std::function<void(const Case&, const CaseResult&)> on_case = {}) const {
    auto target = registry.make("xnnpack", options);
    CampaignOptions o;
    o.seed = 20261130;
    o.cases = cases;
    o.on_case = std::move(on_case);
    return run_target_campaign(*target, *reference, [p](const CaseSpace& s) { return gen_case(p, s); }, o);
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

const WrittenFinding* first_finding(const TargetRun& r, const std::function<bool(const WrittenFinding&)>& want) {
  for (const auto& f : r.findings)
    if (want(f)) return &f;
  return nullptr;
}

// f32 calls with positive scales: where upstream's recovery is exact
// against the graph's own literals.
GenPolicy f32_positive() {
  GenPolicy p = GenPolicy::defaults();
  p.dtype_weights = {{DType::f32, 1}, {DType::f16, 0}};
  p.scale_weights = {{GenPolicy::ScaleKind::none, 1}, {GenPolicy::ScaleKind::ordinary, 1}};
  return p;
}

TEST(XnnpackCampaign, DefaultOptionsNeverCrashOrDisagreeIn1000Cases) {
  std::map<std::string, std::map<std::string, int>> per_variant;  // variant -> outcome -> cases
  TargetRun r = fixture().campaign({}, 1000, GenPolicy::defaults(), [&](const Case& c, const CaseResult& res) {
    std::string outcome = "refused";
    if (res.verdict != Verdict::unsupported || !res.decisions.empty()) {
      bool converted = false, lifted = false;
      for (const auto& d : res.decisions) {
        converted = converted || d.pass == "ConvertToSDPAPass";
        lifted = lifted || (d.pass == "LiftConstantScalarOperandsPass" && d.rewrite);
      }
      outcome = converted ? "pattern kept whole, converted" : lifted ? "MUL lifted, not converted" : "both passes out";
      if (converted && res.verdict == Verdict::unsound_rewrite) outcome = "converted, scale lost";
    }
    ++per_variant[c.variant][outcome];
  });
  std::printf("%s", run_summary_text({r}).c_str());
  for (const auto& [variant, outcomes] : per_variant)
    for (const auto& [outcome, n] : outcomes) std::printf("  %-13s %-32s %d\n", variant.c_str(), outcome.c_str(), n);
  for (const char* v : {"crash", "unexpected-error", "entry-disagree", "oracle-disagree", "timeout"})
    EXPECT_EQ(r.verdicts[v], 0) << v << "\n" << run_summary_text({r});
  // missed-rewrite: the lift's guard keeps a MUL that feeds a bmm though no
  // pattern matches (conservative upstream, semantics §3.4): a warning.
  EXPECT_GT(r.verdicts["pass"] + r.verdicts["rejected"] + r.verdicts["missed-rewrite"], 300) << run_summary_text({r});
  EXPECT_GT(per_variant["qk"]["pattern kept whole, converted"], 0);
}

TEST(XnnpackCampaign, PatternGraphFlowLosesTheSignOfANegativeScaleFoundAndShrunk) {
  GenPolicy p = GenPolicy::defaults();
  p.scale_weights = {{GenPolicy::ScaleKind::negative, 1}};
  TargetRun r = fixture().campaign({{"entry", "pattern"}}, 300, p);
  const WrittenFinding* w = first_finding(r, [](const WrittenFinding& f) {
    return f.verdict == "unsound-rewrite" && f.shrunk.effective_scale() < 0;
  });
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  EXPECT_TRUE(small(w->shrunk)) << case_summary(w->shrunk);
  std::printf("sign lost: case %lld, shrunk in %d steps to %s\n", static_cast<long long>(w->iteration),
              w->shrink_steps, case_summary(w->shrunk).c_str());
}

TEST(XnnpackCampaign, PatternGraphF32RecoveryIsSoundAgainstTheGraphsLiterals) {
  TargetRun r = fixture().campaign({{"entry", "pattern"}}, 300, f32_positive());
  EXPECT_EQ(r.verdicts["unsound-rewrite"] + r.verdicts["rounded-constant"], 0) << run_summary_text({r});
}

TEST(XnnpackCampaign, AMutantRecoveryOneUlpOffIsCaughtAndShrunk) {
  TargetRun r = fixture().campaign({{"entry", "pattern"}, {"mutant", "recovery-one-ulp"}}, 300, f32_positive());
  const WrittenFinding* w = first_finding(r, [](const WrittenFinding& f) {
    return f.verdict == "rounded-constant" || f.verdict == "unsound-rewrite";
  });
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  EXPECT_NE(w->finding.detail.find("scale"), std::string::npos) << w->finding.detail;
  EXPECT_TRUE(small(w->shrunk)) << case_summary(w->shrunk);
  std::printf("recovery-one-ulp: %s at case %lld, shrunk in %d steps to %s\n  %s\n", w->verdict.c_str(),
              static_cast<long long>(w->iteration), w->shrink_steps, case_summary(w->shrunk).c_str(),
              w->finding.detail.c_str());
}

TEST(XnnpackCampaign, AMutantUnguardedLiftIsCaughtAsAPassOrderInvariant) {
  TargetRun r = fixture().campaign({{"entry", "pattern"}, {"mutant", "lift-unguarded"}}, 300);
  const WrittenFinding* w = first_finding(r, [](const WrittenFinding& f) {
    return f.verdict == "broken-invariant" && f.finding.detail.find("pass order") != std::string::npos;
  });
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  EXPECT_TRUE(small(w->shrunk)) << case_summary(w->shrunk);
  std::printf("lift-unguarded: case %lld, shrunk in %d steps to %s\n", static_cast<long long>(w->iteration),
              w->shrink_steps, case_summary(w->shrunk).c_str());
}

// In f16 the lift materializes the scale as torch.tensor(0.1, dtype=f16):
// the rounding alone explains the difference, so the finding is a rounded
// constant (the entry's value put back into the lifted buffer), not an
// unsound rewrite.
TEST(XnnpackCampaign, TheF16LiftRoundsTheScaleIntoItsBufferAndIsNamedARoundedConstant) {
  auto target = fixture().registry.make("xnnpack", {{"guard", "lift"}});
  Case c = testing::with_variant(testing::masked_call(8, DType::f16), "scores");
  c.scale = 0.1;
  CaseResult r = run_case(*target, *fixture().reference, c);
  ASSERT_EQ(r.verdict, Verdict::rounded_constant) << (r.primary() ? r.primary()->detail : "");
  const std::string& d = r.primary()->detail;
  EXPECT_NE(d.find("after the rewrite"), std::string::npos) << d;
  EXPECT_NE(d.find("ulp of f16"), std::string::npos) << d;
  EXPECT_NE(d.find("put back"), std::string::npos) << d;
  // Without the lift the literal stays a Python float: nothing changes.
  auto none = fixture().registry.make("xnnpack", {{"guard", "none"}});
  EXPECT_NE(run_case(*none, *fixture().reference, c).verdict, Verdict::rounded_constant);
}

// Target::counters summed per variant into the campaign and run.json: only
// the traced pattern (qk) is converted, an op in the path keeps it whole
// on portable kernels, and the library takes some nodes of every variant.
TEST(XnnpackCampaign, CountsNodesAndConversionsPerVariant) {
  TargetRun r = fixture().campaign({}, 400);
  ASSERT_TRUE(r.variants.count("qk") && r.variants.count("qk-clone")) << run_summary_text({r});
  const VariantRun& qk = r.variants.at("qk");
  EXPECT_GT(qk.counters.at("patterns traced"), 0);
  EXPECT_GT(qk.counters.at("converted to SDPA"), 0);
  EXPECT_LE(qk.counters.at("converted to SDPA"), qk.counters.at("patterns traced"));
  for (const char* v : {"qk-clone", "qk-transpose", "qk-to-copy", "q", "scores"}) {
    if (!r.variants.count(v)) continue;
    EXPECT_EQ(r.variants.at(v).counters.at("converted to SDPA"), 0) << v;
    EXPECT_GT(r.variants.at(v).counters.at("delegated nodes"), 0) << v;
    EXPECT_GT(r.variants.at(v).counters.at("portable nodes"), 0) << v;
  }
  int64_t cases = 0;
  for (const auto& [name, v] : r.variants) cases += v.cases;
  EXPECT_EQ(cases, r.cases);
  const nlohmann::json j = run_summary({}, {r}, false)["targets"]["xnnpack"]["variants"];
  EXPECT_EQ(j["qk"]["counters"]["converted to SDPA"], qk.counters.at("converted to SDPA"));
  EXPECT_EQ(j["qk"]["cases"], qk.cases);
}

}  // namespace
}  // namespace sdpa::xnnpack
