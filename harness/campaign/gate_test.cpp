#include "harness/campaign/gate.h"

#include <gtest/gtest.h>

#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

GateDecision decision(int64_t index, bool rewrite, bool sound, int64_t lkv = 4) {
  GateDecision d;
  d.index = index;
  d.c.q_len = 2;
  d.c.kv_len = lkv;
  d.rewrite = rewrite;
  d.sound = sound;
  d.rule = rewrite ? "accept" : "unmasked-lengths";
  d.verdict = rewrite ? (sound ? "pass" : "unsound-rewrite") : (sound ? "missed-rewrite" : "rejected");
  return d;
}

DecisionsFile file(std::vector<GateDecision> d) {
  DecisionsFile f;
  f.target = "llm";
  f.options = {{"guard", "contract"}};
  f.decisions = std::move(d);
  return f;
}

TEST(Gate, SortsEachChangedDecisionIntoItsClass) {
  // index: base -> head
  DecisionsFile base = file({decision(0, true, true),     // 0: sound rewrite -> unsound: newly unsound
                             decision(1, true, false),    // 1: unsound -> kept: unsound fixed
                             decision(2, true, true),     // 2: sound rewrite -> kept, sound: newly missed
                             decision(3, false, false),   // 3: kept -> sound rewrite: newly rewritten
                             decision(4, true, false),    // 4: unsound in both
                             decision(5, false, true)});  // 5: missed in both
  DecisionsFile head = file({decision(0, true, false), decision(1, false, false), decision(2, false, true),
                             decision(3, true, true), decision(4, true, false), decision(5, false, true)});
  GateComparison c = compare_decisions(base, head);
  EXPECT_EQ(c.changes[GateClass::newly_unsound].size(), 1u);
  EXPECT_EQ(c.changes[GateClass::unsound_fixed].size(), 1u);
  EXPECT_EQ(c.changes[GateClass::newly_missed].size(), 1u);
  EXPECT_EQ(c.changes[GateClass::newly_rewritten_sound].size(), 1u);
  EXPECT_EQ(c.changes[GateClass::newly_missed][0].head.index, 2);
  EXPECT_EQ(c.unchanged, 2);
  EXPECT_EQ(c.still_unsound, 1);
  EXPECT_EQ(c.still_missed, 1);
}

GateDecision on_node(GateDecision d, const std::string& node) {
  d.pass = "p";
  d.node = node;
  return d;
}

TEST(Gate, EveryDecisionOfACaseIsComparedNodeByNode) {
  // One case, two nodes: %a goes from kept to a sound rewrite, %b from a
  // sound rewrite to kept and still sound. A gate keeping one decision per
  // case would see only %a.
  DecisionsFile base = file({on_node(decision(0, false, false), "%a"), on_node(decision(0, true, true), "%b")});
  DecisionsFile head = file({on_node(decision(0, true, true), "%a"), on_node(decision(0, false, true), "%b")});
  GateComparison c = compare_decisions(base, head);
  EXPECT_EQ(c.cases, 1);
  EXPECT_EQ(c.decisions, 2);
  ASSERT_EQ(c.changes[GateClass::newly_rewritten_sound].size(), 1u);
  EXPECT_EQ(c.changes[GateClass::newly_rewritten_sound][0].head.node, "%a");
  ASSERT_EQ(c.changes[GateClass::newly_missed].size(), 1u);
  EXPECT_EQ(c.changes[GateClass::newly_missed][0].head.node, "%b");
  // A node only one policy decided on counts as kept and unsound in the other.
  GateComparison partial = compare_decisions(file({on_node(decision(0, true, true), "%a")}), head);
  EXPECT_EQ(partial.decisions, 2);
  EXPECT_EQ(partial.still_missed, 1);
}

TEST(Gate, ANodeOnlyTheHeadDecidedOnShowsTheBasesOwnVerdictForTheCase) {
  GateDecision none = decision(0, false, false);
  none.rule = "no-decision";
  none.verdict = "pass";
  DecisionsFile head = file({on_node(decision(0, true, false), "%mul")});
  GateComparison c = compare_decisions(file({none}), head);
  ASSERT_EQ(c.changes[GateClass::newly_unsound].size(), 1u);
  const GateChange& ch = c.changes[GateClass::newly_unsound][0];
  EXPECT_EQ(ch.base.rule, "no-decision");
  EXPECT_EQ(ch.base.verdict, "pass");
  EXPECT_EQ(ch.head.verdict, "unsound-rewrite");
}

// A case where the base's pass raised (a whole-case record, counted as an
// unsound rewrite) and the head decided on a node: one decision, compared
// once. An unsound head rewrite is unsound in both; a sound one fixes it.
TEST(Gate, ARaisedPassIsComparedWithEachNodeTheOtherPolicyDecidedOnceOnly) {
  GateDecision raised = decision(0, true, false);
  raised.rule = "pass-raised";
  raised.verdict = "unexpected-error";
  GateDecision raised1 = raised;
  raised1.index = 1;
  DecisionsFile base = file({raised, raised1});
  DecisionsFile head = file({on_node(decision(0, true, false), "%sdpa"), on_node(decision(1, true, true), "%sdpa")});
  GateComparison c = compare_decisions(base, head);
  EXPECT_EQ(c.cases, 2);
  EXPECT_EQ(c.decisions, 2);
  EXPECT_TRUE(c.changes[GateClass::newly_unsound].empty());
  EXPECT_TRUE(c.changes[GateClass::newly_rewritten_sound].empty());
  EXPECT_EQ(c.still_unsound, 1);
  // Unsound in both, but the failed export is now an unsound rewrite.
  ASSERT_EQ(c.verdict_changed.size(), 1u);
  EXPECT_EQ(c.verdict_changed[0].base.verdict, "unexpected-error");
  EXPECT_EQ(c.verdict_changed[0].head.verdict, "unsound-rewrite");
  ASSERT_EQ(c.changes[GateClass::unsound_fixed].size(), 1u);
  const GateChange& fixed = c.changes[GateClass::unsound_fixed][0];
  EXPECT_EQ(fixed.base.rule, "pass-raised");
  EXPECT_EQ(fixed.base.node, "%sdpa");
  EXPECT_EQ(fixed.head.index, 1);
  // The other way round: a head whose pass raises where the base rewrote soundly.
  GateComparison back = compare_decisions(head, base);
  EXPECT_EQ(back.decisions, 2);
  ASSERT_EQ(back.changes[GateClass::newly_unsound].size(), 1u);
  EXPECT_EQ(back.changes[GateClass::newly_unsound][0].head.rule, "pass-raised");
  EXPECT_EQ(back.still_unsound, 1);
}

// A head whose case's process died (a whole-case record, "process-died")
// where the base rewrote soundly is newly unsound; a record with an empty
// node but a rule of its own (a file from before decisions named their
// node) is an ordinary decision, not a whole-case one.
TEST(Gate, ADeadProcessIsAnUnsoundRewriteAndOnlyWholeCaseRulesStandIn) {
  GateDecision died = decision(0, true, false);
  died.rule = "process-died";
  died.verdict = "crash";
  GateComparison c = compare_decisions(file({on_node(decision(0, true, true), "%sdpa")}), file({died}));
  EXPECT_EQ(c.decisions, 1);
  ASSERT_EQ(c.changes[GateClass::newly_unsound].size(), 1u);
  EXPECT_EQ(c.changes[GateClass::newly_unsound][0].head.rule, "process-died");
  GateComparison old = compare_decisions(file({on_node(decision(0, true, true), "%sdpa")}),
                                         file({decision(0, true, true)}));
  EXPECT_EQ(old.decisions, 2);  // compared node by node: the unnamed one stands alone
}

TEST(Gate, SmallestCaseOfAClass) {
  std::vector<GateChange> changes{{decision(0, true, true, 9), decision(0, false, true, 9)},
                                  {decision(1, true, true, 3), decision(1, false, true, 3)}};
  EXPECT_EQ(smallest(changes)->head.index, 1);
  EXPECT_EQ(smallest({}), nullptr);
}

// A newly unsound decision is shown on a case whose verdict is the defect,
// before a smaller one a later step leaves unsupported; other classes
// show the smallest.
TEST(Gate, ANewlyUnsoundExampleEndsInAFailureBeforeASmallerUnsupportedCase) {
  GateChange unsupported{decision(0, false, false, 3), decision(0, true, false, 3)};
  unsupported.head.verdict = "unsupported";
  GateChange rounded{decision(1, false, false, 9), decision(1, true, false, 9)};
  rounded.head.verdict = "rounded-constant";
  const std::vector<GateChange> changes{unsupported, rounded};
  EXPECT_EQ(example(GateClass::newly_unsound, changes)->head.index, 1);
  EXPECT_EQ(example(GateClass::newly_rewritten_sound, changes)->head.index, 0);
  EXPECT_EQ(example(GateClass::newly_unsound, {unsupported})->head.index, 0);
  EXPECT_EQ(example(GateClass::newly_unsound, {}), nullptr);
  // A finding the base already gave the case comes after one it did not.
  GateChange same{decision(2, false, false, 5), decision(2, true, false, 5)};
  same.base.verdict = same.head.verdict = "invalid-rewrite";
  EXPECT_EQ(example(GateClass::newly_unsound, {same, rounded, unsupported})->head.index, 1);
  EXPECT_EQ(example(GateClass::newly_unsound, {same, unsupported})->head.index, 2);
}

TEST(Gate, SamplesMustMatch) {
  EXPECT_THROW(compare_decisions(file({decision(0, true, true)}), file({})), InputError);
  EXPECT_THROW(compare_decisions(file({decision(0, true, true, 4)}), file({decision(0, true, true, 5)})), InputError);
}

TEST(Gate, DecisionsFileRoundTripsAndRejectsTypos) {
  DecisionsFile f = file({decision(0, true, true), decision(1, false, true)});
  nlohmann::json j = decisions_to_json(f);
  EXPECT_EQ(decisions_to_json(decisions_from_json(j, "d.json")), j);
  j["decisions"][1]["sond"] = true;
  try {
    decisions_from_json(j, "d.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "d.json: decisions[1].sond: unknown field");
  }
}

TEST(Gate, DecisionsFileRejectsOutOfRangeSeedAndMaxSize) {
  nlohmann::json j = decisions_to_json(file({decision(0, true, true)}));
  auto error = [](const nlohmann::json& bad) {
    try {
      decisions_from_json(bad, "d.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  nlohmann::json bad = j;
  bad["max_size"] = int64_t{1} << 32;  // would wrap to 0 as an int
  EXPECT_EQ(error(bad), "d.json: max_size: expected an integer in [0, 2^31), got 4294967296");
  bad = j;
  bad["seed"] = -1;
  EXPECT_EQ(error(bad), "d.json: seed: expected an integer >= 0, got -1");
}

}  // namespace
}  // namespace sdpa
