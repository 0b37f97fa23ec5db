// Campaigns on the mha entry form of the cortex-m target: the module's
// golden out_proj(SDPA(in_proj(x))) through the harness's composite hook.
// Clean with fp32 and with int8 linears (the bound's tightness printed);
// the §1.6 retraced int32 linear is a dtype-mismatch naming %bmm_1, shrunk;
// an f16-accumulating linear kernel is caught by the composite bound.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/all_targets.h"
#include "backends/target_fixture.h"
#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "oracles/dual_oracle.h"
#include "reports/run_summary.h"

namespace sdpa::cortex_m {
namespace {

using Fixture = TargetFixture;

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

// The largest |C - G| / bound over the cases' accuracy checks.
struct Tightness {
  double worst = 0, worst_model = 0;
  std::vector<double> ratios;
};

TargetRun campaign(const Options& options, int64_t cases, Tightness* t = nullptr, int64_t stop_after = 0) {
  Options o = options;
  o["entry"] = "mha";
  auto target = fixture().registry.make("cortex-m", o);
  CampaignOptions c;
  c.seed = 20261201;
  c.cases = cases;
  c.stop_after = stop_after;
  if (t)
    c.on_case = [t](const Case&, const CaseResult& r) {
      for (const auto& s : r.accuracy) {
        t->worst = std::max(t->worst, s.ratio);
        t->worst_model = std::max(t->worst_model, s.model_ratio);
        t->ratios.push_back(s.model_ratio);
      }
    };
  return run_target_campaign(*target, *fixture().reference, fixture().generators, c);
}

void print_verdicts(const char* what, const TargetRun& r, const Tightness* t = nullptr) {
  std::string s;
  for (const auto& [v, n] : r.verdicts) s += " " + v + "=" + std::to_string(n);
  std::printf("%s: %lld cases:%s\n", what, static_cast<long long>(r.cases), s.c_str());
  if (t && !t->ratios.empty()) {
    std::vector<double> v = t->ratios;
    std::sort(v.begin(), v.end());
    std::printf("  |C - G| / bound: worst %.3g (error model alone %.3g), median %.3g, 90th percentile %.3g\n",
                t->worst, t->worst_model, v[v.size() / 2], v[v.size() * 9 / 10]);
  }
}

bool small(const Case& c) {
  ConcreteSizes s = concrete_sizes(c, c.runs()[0]);
  return s.batch_numel() <= 2 && s.Hq <= 2 && s.Lq <= 2 && s.Lkv <= 2 && s.E <= 2;
}

void expect_clean(const TargetRun& r) {
  for (const auto& [v, n] : r.verdicts)
    EXPECT_TRUE(v == "pass" || v == "rejected") << v << " " << n << "\n" << run_summary_text({r});
}

TEST(MhaCampaign, Fp32LinearsAroundInt8AttentionAreClean) {
  Tightness t;
  TargetRun r = campaign({}, 300, &t);
  print_verdicts("cortex-m entry=mha", r, &t);
  expect_clean(r);
  EXPECT_GT(r.verdicts["pass"], 250);
  EXPECT_LE(t.worst, 1.0);
}

TEST(MhaCampaign, Int8LinearsAreClean) {
  Tightness t;
  TargetRun r = campaign({{"linear", "int8"}}, 300, &t);
  print_verdicts("cortex-m entry=mha linear=int8", r, &t);
  expect_clean(r);
  EXPECT_GT(r.verdicts["pass"], 250);
}

TEST(MhaCampaign, FloatPipelineIsClean) {
  Tightness t;
  TargetRun r = campaign({{"quantize", "off"}}, 200, &t);
  print_verdicts("cortex-m entry=mha quantize=off", r, &t);
  expect_clean(r);
}

TEST(MhaCampaign, IdentityWithPassesOffPasses) {
  auto target = fixture().registry.make("cortex-m", {{"entry", "mha"}});
  CampaignOptions c;
  c.seed = 3;
  c.cases = 100;
  c.check.passes = false;
  TargetRun r = run_target_campaign(*target, *fixture().reference, fixture().generators, c);
  print_verdicts("cortex-m entry=mha identity", r);
  EXPECT_EQ(r.verdicts["pass"], 100) << run_summary_text({r});
}

// §1.6 (#21943): every case's lowered graph meets the int32 v projection at
// the second attention bmm; the finding names it and shrinks to the smallest module.
TEST(MhaCampaign, RetracedInt32LinearIsADtypeMismatchShrunk) {
  TargetRun r = campaign({{"linear", "retraced-int32"}}, 50, nullptr, 1);
  ASSERT_FALSE(r.findings.empty()) << run_summary_text({r});
  const WrittenFinding& w = r.findings[0];
  EXPECT_EQ(w.verdict, "dtype-mismatch");
  EXPECT_EQ(w.finding.detail.rfind("type error at %bmm_1 (cortex_m.quantized_batch_matmul.default): expected scalar "
                                   "type torch.int8 but found torch.int32",
                                   0),
            0u)
      << w.finding.detail;
  EXPECT_NE(w.finding.detail.find("rhs int32 from %in_proj_v (aten.linear.default)"), std::string::npos);
  EXPECT_EQ(r.verdicts["crash"] + r.verdicts["unexpected-error"], 0);
  EXPECT_TRUE(small(w.shrunk)) << case_summary(w.shrunk);
  std::printf("retraced-int32: shrunk in %d steps to %s\n  %s\n", w.shrink_steps, case_summary(w.shrunk).c_str(),
              w.finding.detail.c_str());
  // The fixed meta passes the shrunk case.
  auto fixed = fixture().registry.make("cortex-m", {{"entry", "mha"}, {"linear", "int8"}});
  EXPECT_EQ(run_case(*fixed, *fixture().reference, w.shrunk).verdict, Verdict::pass);
}

// A linear kernel that accumulates in f16 (the mutant): the composite bound
// carries fp32 rounding only, so the module's output leaves it.
TEST(MhaCampaign, AnF16LinearIsCaughtAndShrunk) {
  TargetRun r = campaign({{"quantize", "off"}, {"mutant", "linear-f16"}}, 300, nullptr, 1);
  const WrittenFinding* w = nullptr;
  for (const auto& f : r.findings)
    if (!w && f.verdict == "inaccurate-kernel") w = &f;
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  EXPECT_GT(w->shrink_steps, 0);
  std::printf("linear-f16: inaccurate-kernel at case %lld, shrunk in %d steps to %s\n  %s\n",
              static_cast<long long>(w->iteration), w->shrink_steps, case_summary(w->shrunk).c_str(),
              w->finding.detail.c_str());
  auto right = fixture().registry.make("cortex-m", {{"entry", "mha"}, {"quantize", "off"}});
  EXPECT_EQ(run_case(*right, *fixture().reference, w->shrunk).verdict, Verdict::pass);
}

TEST(MhaTarget, CasesTheModuleCannotExpressAreUnsupportedWithTheReason) {
  auto t = fixture().registry.make("cortex-m", {{"entry", "mha"}});
  Case c;
  c.kv_heads = 1;
  c.q_heads = 2;
  c.enable_gqa = true;
  CaseResult r = run_case(*t, *fixture().reference, c);
  EXPECT_EQ(r.verdict, Verdict::unsupported);
  EXPECT_NE(r.primary()->detail.find("one head count"), std::string::npos) << r.primary()->detail;
}

}  // namespace
}  // namespace sdpa::cortex_m
