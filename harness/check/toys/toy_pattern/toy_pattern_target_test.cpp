// The pattern toy: a correct scale recovery refines the entry graph; one
// off by an f32 ulp is named as a rounded constant; a lost sign is unsound;
// an entry model that means the wrong scale is an entry-disagree finding.
#include <gtest/gtest.h>

#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "harness/check/toys/toy_targets.h"
#include "harness/io/json_reader.h"
#include "oracles/dual_oracle.h"

namespace sdpa::toy_pattern {
namespace {

struct Fixture {
  TargetRegistry registry;
  std::unique_ptr<ReferenceModel> reference = make_dual_oracle();
  Fixture() { register_toy_targets(registry); }

  TargetRun campaign(const Options& options, int64_t cases) const {
    auto target = registry.make("toy-pattern", options);
    CampaignOptions o;
    o.seed = 20261130;
    o.cases = cases;
    return run_target_campaign(*target, *reference,
                               [](const CaseSpace& s) { return gen_case(GenPolicy::defaults(), s); }, o);
  }
  CaseResult check(const Options& options, const Case& c) const {
    return run_case(*registry.make("toy-pattern", options), *reference, c);
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

Case call() {
  Case c;
  c.batch = {SymExpr(1)};
  c.q_heads = c.kv_heads = 2;
  c.q_len = 3;
  c.kv_len = 4;
  c.head_dim = c.value_dim = 5;  // 1/sqrt(5) is not an f32 value
  c.data.seed = 7;
  return c;
}

TEST(ToyPattern, ExactRecoveryRefinesTheEntryEverywhere) {
  TargetRun r = fixture().campaign({}, 300);
  EXPECT_GT(r.verdicts["pass"], 100);
  for (const auto& [verdict, n] : r.verdicts)
    if (is_failure(*parse_verdict(verdict))) ADD_FAILURE() << verdict << ": " << n;
}

TEST(ToyPattern, OneUlpOffRecoveryIsARoundedConstantWithItsUlps) {
  CaseResult r = fixture().check({{"mutant", "recovery-one-ulp"}}, call());
  ASSERT_EQ(r.verdict, Verdict::rounded_constant);
  const Finding* f = r.primary();
  EXPECT_NE(f->detail.find("scale"), std::string::npos) << f->detail;
  EXPECT_NE(f->detail.find("(1 ulp of f32)"), std::string::npos) << f->detail;
  EXPECT_NE(f->detail.find("effect"), std::string::npos) << f->detail;
  // Found by a campaign too, from a fixed seed.
  TargetRun run = fixture().campaign({{"mutant", "recovery-one-ulp"}}, 200);
  EXPECT_GT(run.verdicts["rounded-constant"], 0);
}

TEST(ToyPattern, ALostSignIsUnsoundNotARoundedConstant) {
  CaseResult r = fixture().check({{"mutant", "recovery-sign"}}, call());
  ASSERT_EQ(r.verdict, Verdict::unsound_rewrite);
  EXPECT_NE(r.primary()->detail.find("scale"), std::string::npos) << r.primary()->detail;
}

TEST(ToyPattern, AVariantTheTargetDoesNotDefineIsABadFile) {
  Case c = call();
  c.variant = "scale-on-q";
  try {
    fixture().check({}, c);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("case.variant: target toy-pattern has no variants"), std::string::npos)
        << e.what();
  }
}

TEST(ToyPattern, AnEntryModelWithTheWrongMeaningIsEntryDisagree) {
  CaseResult r = fixture().check({{"meaning", "case"}}, call());
  ASSERT_EQ(r.verdict, Verdict::entry_disagree);
  EXPECT_NE(r.primary()->detail.find("entry pattern"), std::string::npos) << r.primary()->detail;
  EXPECT_TRUE(r.decisions.empty()) << "a wrong entry model is never blamed on a pass";
}

}  // namespace
}  // namespace sdpa::toy_pattern
