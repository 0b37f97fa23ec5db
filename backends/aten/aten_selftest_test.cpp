// Self-tests of the harness on the aten target: the identity passes, the
// real pass passes, and each deliberately wrong pass or kernel is found
// from a fixed seed within 1,000 cases and shrunk to a minimal case.
#include <gtest/gtest.h>

#include "backends/aten/aten_target.h"
#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "harness/case/case_validate.h"
#include "oracles/dual_oracle.h"
#include "reports/campaign_stats.h"
#include "reports/run_summary.h"

namespace sdpa::aten {
namespace {

struct Fixture {
  std::unique_ptr<TargetFactory> factory = make_factory();
  std::unique_ptr<ReferenceModel> reference = make_dual_oracle();
  CaseGeneratorFactory generators = [](const CaseSpace& s) { return gen_case(GenPolicy::defaults(), s); };

  std::unique_ptr<Target> target(const std::string& mutant = "none") const {
    return factory->make(resolve_options(*factory, {{"mutant", mutant}}));
  }
  TargetRun campaign(const Target& t, int64_t cases, CheckOptions check = {}, int shard = 0,
                     int shards = 1) const {
    CampaignOptions o;
    o.seed = 20261130;
    o.cases = cases;
    o.check = check;
    o.shard = shard;
    o.shards = shards;
    return run_target_campaign(t, *reference, generators, o);
  }
};

int64_t failures(const TargetRun& r) {
  int64_t n = 0;
  for (const auto& [v, count] : r.verdicts) n += is_failure(*parse_verdict(v)) ? count : 0;
  return n;
}

TEST(AtenSelfTest, IdentityWithPassesOffAlwaysPasses) {
  Fixture f;
  auto t = f.target();
  CheckOptions identity;
  identity.passes = false;
  TargetRun r = f.campaign(*t, 400, identity);
  EXPECT_EQ(failures(r), 0) << run_summary_text({r});
  EXPECT_GT(r.verdicts["pass"], 300);
}

TEST(AtenSelfTest, MathDecompositionIsSoundAndAccurate) {
  Fixture f;
  auto t = f.target();
  TargetRun r = f.campaign(*t, 1000);
  EXPECT_EQ(failures(r), 0) << run_summary_text({r});
}

// Non-finite data and zero-size dims are drawn (counted in the coverage),
// and the decomposition on every kernel set stays clean on them.
TEST(AtenSelfTest, NonFiniteAndEmptyCasesAreDrawnAndClean) {
  Fixture f;
  auto t = f.target();
  GenPolicy p = GenPolicy::defaults();
  p.p_special = 0.3;
  p.p_empty = 0.1;
  CampaignStats stats([](const Case&) { return std::vector<std::string>{}; });
  CampaignOptions o;
  o.seed = 20261201;
  o.cases = 600;
  o.on_case = stats.collector("aten");
  TargetRun r = run_target_campaign(*t, *f.reference, [p](const CaseSpace& s) { return gen_case(p, s); }, o);
  EXPECT_EQ(failures(r), 0) << run_summary_text({r});
  const Coverage& c = stats.targets().at("aten").coverage;
  for (const char* kind : {"finite", "nan", "+inf", "-inf", "overflow", "huge", "empty"})
    EXPECT_GT(c.data.count(kind) ? c.data.at(kind) : 0, 5) << kind;
}

TEST(AtenSelfTest, SameSeedSameRunJson) {
  Fixture f;
  auto t = f.target("drop-scale");
  RunSettings s;
  nlohmann::json a = run_summary(s, {f.campaign(*t, 150)}, false);
  nlohmann::json b = run_summary(s, {f.campaign(*t, 150)}, false);
  EXPECT_EQ(a.dump(), b.dump());
}

TEST(AtenSelfTest, ShardsPartitionTheSameCases) {
  Fixture f;
  auto t = f.target("gqa-modulo");
  TargetRun whole = f.campaign(*t, 120);
  TargetRun s0 = f.campaign(*t, 120, {}, 0, 2), s1 = f.campaign(*t, 120, {}, 1, 2);
  EXPECT_EQ(s0.cases + s1.cases, whole.cases);
  for (const auto& [v, n] : whole.verdicts) EXPECT_EQ(s0.verdicts[v] + s1.verdicts[v], n) << v;
}

// Every size of `c` one smaller (where the result is still a valid call).
std::vector<std::pair<std::string, Case>> one_smaller(const Case& c) {
  std::vector<std::pair<std::string, Case>> out;
  auto add = [&](const std::string& what, Case s) {
    try {
      validate_case(s);
      out.emplace_back(what, s);
    } catch (const std::exception&) {
    }
  };
  auto dec = [](SymExpr e) { return e.is_constant() && e.constant() > 1 ? SymExpr(e.constant() - 1) : e; };
  for (size_t i = 0; i < c.batch.size(); ++i) {
    Case s = c;
    s.batch.erase(s.batch.begin() + i);
    if (s.mask && s.mask->shape.size() > s.batch.size() + 3) s.mask->shape.erase(s.mask->shape.begin());
    add("batch dim " + std::to_string(i), s);
  }
  struct Field { const char* name; int64_t Case::*member; };
  for (Field fl : {Field{"q_heads", &Case::q_heads}, Field{"kv_heads", &Case::kv_heads},
                   Field{"head_dim", &Case::head_dim}, Field{"value_dim", &Case::value_dim}}) {
    Case s = c;
    if (s.*fl.member > 1) --(s.*fl.member);
    if (s.*fl.member != c.*fl.member) add(fl.name, s);
  }
  Case lq = c;
  lq.q_len = dec(c.q_len);
  if (lq.q_len != c.q_len) add("q_len", lq);
  Case lkv = c;
  lkv.kv_len = dec(c.kv_len);
  if (lkv.kv_len != c.kv_len) add("kv_len", lkv);
  return out;
}

struct MutantExpectation {
  std::string mutant;
  std::vector<Verdict> verdicts;  // what the campaign must report
};

void PrintTo(const MutantExpectation& m, std::ostream* os) { *os << m.mutant; }

class MutantTest : public ::testing::TestWithParam<MutantExpectation> {};

TEST_P(MutantTest, FoundWithin1000CasesAndShrunkToAMinimalCase) {
  Fixture f;
  auto t = f.target(GetParam().mutant);
  TargetRun r = f.campaign(*t, 1000);
  const WrittenFinding* found = nullptr;
  for (const auto& w : r.findings)
    for (Verdict v : GetParam().verdicts)
      if (!found && w.verdict == verdict_name(v)) found = &w;
  ASSERT_NE(found, nullptr) << run_summary_text({r});
  EXPECT_LT(found->iteration, 1000);
  // No size of the shrunk case can be one smaller and still show the bug.
  CheckOptions opt;
  for (const auto& [what, smaller] : one_smaller(found->shrunk)) {
    CaseResult res = run_case(*t, *f.reference, smaller, opt);
    EXPECT_NE(verdict_name(res.verdict), found->verdict)
        << "shrunk case is not minimal in " << what << ": " << case_summary(found->shrunk);
  }
  EXPECT_LE(found->shrunk.batch.size(), 1u) << case_summary(found->shrunk);
}

INSTANTIATE_TEST_SUITE_P(
    Mutants, MutantTest,
    ::testing::Values(MutantExpectation{"drop-scale", {Verdict::unsound_rewrite}},
                      MutantExpectation{"causal-bottom-right", {Verdict::unsound_rewrite}},
                      MutantExpectation{"gqa-modulo", {Verdict::unsound_rewrite}},
                      MutantExpectation{"softmax-no-max", {Verdict::nan_mismatch, Verdict::inaccurate_kernel}},
                      MutantExpectation{"matmul-bf16-output", {Verdict::inaccurate_kernel}}),
    [](const ::testing::TestParamInfo<MutantExpectation>& i) {
      std::string n = i.param.mutant;
      for (char& ch : n) ch = ch == '-' ? '_' : ch;
      return n;
    });

}  // namespace
}  // namespace sdpa::aten
