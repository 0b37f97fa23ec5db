// The gate's summary names the rule that picked each class's case: the
// smallest, or for newly unsound decisions the smallest ending in a (new)
// finding, in gate.md's heading and in gate.json.
#include "reports/gate_summary.h"

#include <gtest/gtest.h>

namespace sdpa {
namespace {

GateChange change(int64_t index, int64_t lkv, const std::string& base_verdict, const std::string& head_verdict) {
  GateChange ch;
  for (GateDecision* d : {&ch.base, &ch.head}) {
    d->index = index;
    d->c.q_len = 2;
    d->c.kv_len = lkv;
    d->node = "%mul";
    d->pass = "LiftConstantScalarOperandsPass";
  }
  ch.base.rule = "not-feeding-qk-bmm";
  ch.base.verdict = base_verdict;
  ch.head.rewrite = true;
  ch.head.rule = "accept";
  ch.head.verdict = head_verdict;
  return ch;
}

GateReport report(std::vector<GateChange> newly_unsound) {
  GateReport r;
  r.target = "xnnpack";
  r.base_label = "guard=lift";
  r.head_label = "guard=lift-257ef3a853";
  for (GateClass c : gate_classes()) r.comparison.changes[c];
  r.comparison.changes[GateClass::newly_unsound] = std::move(newly_unsound);
  return r;
}

std::string rule_of(const GateReport& r) {
  return gate_json(r)["classes"]["newly unsound"]["example_rule"].get<std::string>();
}

TEST(GateSummary, NamesTheRuleThatPickedTheCaseShown) {
  GateReport r = report({change(0, 3, "unsupported", "unsupported"), change(1, 9, "rejected", "rounded-constant")});
  EXPECT_NE(gate_markdown(r).find("### newly unsound: smallest case ending in a new finding"), std::string::npos);
  EXPECT_EQ(rule_of(r), "smallest case ending in a new finding");
  r = report({change(0, 3, "unsupported", "unsupported"), change(1, 9, "invalid-rewrite", "invalid-rewrite")});
  EXPECT_EQ(rule_of(r), "smallest case ending in a finding");
  r = report({change(0, 3, "rejected", "rounded-constant"), change(1, 9, "unsupported", "unsupported")});
  EXPECT_NE(gate_markdown(r).find("### newly unsound: smallest case\n"), std::string::npos);
  EXPECT_EQ(rule_of(r), "smallest case");
}

// Decisions unsound in both whose case verdict changed (an export that
// failed now a crash) are counted by transition and shown, apart from the
// classes: they do not fail the gate.
TEST(GateSummary, ShowsUnsoundInBothDecisionsThatEndInAnotherVerdict) {
  GateReport r = report({});
  EXPECT_EQ(gate_markdown(r).find("another verdict"), std::string::npos);
  GateChange raised = change(3, 5, "unexpected-error", "crash"), small = change(4, 2, "unexpected-error", "crash");
  small.base.rule = "pass-raised";
  GateChange nan = change(5, 7, "unexpected-error", "nan-mismatch");
  r.comparison.verdict_changed = {raised, small, nan};
  r.verdict_changed_file = "out/cases/unsound-in-both-another-verdict.json";
  const std::string md = gate_markdown(r);
  EXPECT_NE(md.find("Unsound in both but ending in another verdict: 3 decision(s) (`unexpected-error → crash` 2, "
                    "`unexpected-error → nan-mismatch` 1)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("### unsound in both, another verdict: smallest case\n\n`" + case_summary(small.head.c) + "`"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- before: the pass raised (export fails), unsound (unexpected-error)"), std::string::npos) << md;
  EXPECT_NE(md.find("replay: `sdpacheck replay out/cases/unsound-in-both-another-verdict.json`"), std::string::npos);
  EXPECT_TRUE(r.failures().empty());
  const auto j = gate_json(r)["still_unsound_verdict_changed"];
  EXPECT_EQ(j["count"], 3);
  EXPECT_EQ(j["transitions"]["unexpected-error → crash"], 2);
  EXPECT_EQ(j["smallest"], case_summary(small.head.c));
}

}  // namespace
}  // namespace sdpa
