// The completeness proof on the xnnpack target with and without node reuse
// across exact runs (CheckOptions::reuse_exact_nodes, node_memo.h): each
// forced lift of a mul.Scalar leaves the rest of the pattern graph as the
// entry graph has it, so most of its nodes are found in the memo. Every
// verdict, decision (sound_alone, refuted_at) and finding must be the same
// either way, on cases where the proof refutes (f16: the lifted constant
// rounds to f16, the Scalar to f32) and where it holds (missed rewrites).
#include <gtest/gtest.h>

#include "backends/all_targets.h"
#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "oracles/dual_oracle.h"

namespace sdpa::xnnpack {
namespace {

struct Checked {
  Case c;
  CaseResult r;
};

std::string decisions_str(const CaseResult& r) {
  std::string s;
  for (const auto& d : r.decisions)
    s += d.node + " " + d.pass + " " + d.deciding_rule + (d.rewrite ? " rewrite" : " kept") +
         (d.sound_alone ? " sound" : " unsound") + " [" + d.refuted_at + "]\n";
  return s;
}

std::string findings_str(const CaseResult& r) {
  std::string s = std::string(verdict_name(r.verdict)) + "\n";
  for (const auto& f : r.findings) s += std::string(verdict_name(f.verdict)) + " " + f.first_node + ": " + f.detail + "\n";
  return s;
}

TEST(XnnpackProof, NodeReuseChangesNoVerdictDecisionOrFinding) {
  TargetRegistry registry;
  register_all_targets(registry);
  std::unique_ptr<ReferenceModel> reference = make_dual_oracle();
  auto target = registry.make("xnnpack", {});
  std::vector<Checked> cases;
  CampaignOptions o;
  o.seed = 5;
  o.cases = 150;
  o.max_shrink_steps = 0;
  o.on_case = [&](const Case& c, const CaseResult& r) { cases.push_back({c, r}); };
  run_target_campaign(*target, *reference, [](const CaseSpace& s) { return gen_case(GenPolicy::defaults(), s); }, o);
  ASSERT_EQ(cases.size(), 150u);
  CheckOptions plain = o.check;
  plain.reuse_exact_nodes = false;
  int refuted = 0, missed = 0;
  for (const auto& [c, reused] : cases) {
    const CaseResult r = run_case(*target, *reference, c, plain);
    EXPECT_EQ(findings_str(r), findings_str(reused)) << "seed " << c.data.seed;
    EXPECT_EQ(decisions_str(r), decisions_str(reused)) << "seed " << c.data.seed;
    for (const auto& d : r.decisions) refuted += !d.refuted_at.empty();
    missed += r.verdict == Verdict::missed_rewrite;
  }
  // Both outcomes of the proof are compared.
  EXPECT_GT(refuted, 0);
  EXPECT_GT(missed, 0);
}

}  // namespace
}  // namespace sdpa::xnnpack
