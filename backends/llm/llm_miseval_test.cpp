// A contract guard that evaluates one rule wrongly (option `miseval`) is
// caught by a campaign and shrunk, its finding is filed under the rule it
// breaks (from the independent spec, not the guard), and explain on the
// shrunk case names that rule with the guard's own "holds" beside it.
#include <gtest/gtest.h>

#include <filesystem>

#include "backends/all_targets.h"
#include "backends/target_fixture.h"
#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "harness/campaign/explain.h"
#include "oracles/dual_oracle.h"
#include "reports/run_summary.h"

namespace sdpa::llm {
namespace {

using Fixture = TargetFixture;

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

struct Miseval {
  std::string rule, verdict;
};

void PrintTo(const Miseval& m, std::ostream* os) { *os << m.rule; }

class MisevaluatedContract : public ::testing::TestWithParam<Miseval> {};

TEST_P(MisevaluatedContract, IsCaughtShrunkAndExplainedUnderTheBrokenRule) {
  namespace fs = std::filesystem;
  const Miseval& m = GetParam();
  fs::path corpus = fs::temp_directory_path() / ("sdpacheck_llm_miseval_" + m.rule);
  fs::remove_all(corpus);
  auto target = fixture().registry.make("llm", {{"guard", "contract"}, {"miseval", m.rule}});
  CampaignOptions o;
  o.seed = 20261130;
  o.cases = 2000;
  o.corpus_dir = corpus.string();
  CaseGeneratorFactory generators = [](const CaseSpace& s) { return gen_case(GenPolicy::defaults(), s); };
  TargetRun r = run_target_campaign(*target, *fixture().reference, generators, o);

  const WrittenFinding* w = nullptr;
  for (const auto& f : r.findings)
    if (!w && f.verdict == m.verdict) w = &f;
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  EXPECT_EQ(w->finding.failure_class, m.rule) << w->summary;
  ConcreteSizes s = concrete_sizes(w->shrunk, w->shrunk.runs()[0]);
  EXPECT_LE(std::max({s.Hq, s.Lq, s.Lkv, s.E, s.Ev}), 4) << case_summary(w->shrunk);

  ASSERT_FALSE(w->file.empty());
  const std::string text = explain_entry(read_corpus_file(w->file), fixture().registry, *fixture().reference);
  const std::string head = text.substr(0, text.find("\n== The call"));
  EXPECT_NE(head.find("violated fact: " + m.rule + ": "), std::string::npos) << head;
  EXPECT_NE(head.find("(the guard decided: holds"), std::string::npos) << head;
  EXPECT_NE(head.find("the guard disagrees with the specification"), std::string::npos) << head;
  fs::remove_all(corpus);
}

INSTANTIATE_TEST_SUITE_P(Rules, MisevaluatedContract,
                         ::testing::Values(Miseval{"unmasked-lengths", "unsound-rewrite"},
                                           Miseval{"causal-lengths", "crash"}),
                         [](const ::testing::TestParamInfo<Miseval>& i) {
                           std::string n = i.param.rule;
                           for (char& ch : n) ch = ch == '-' ? '_' : ch;
                           return n;
                         });

}  // namespace
}  // namespace sdpa::llm
