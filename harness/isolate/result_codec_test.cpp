#include "harness/isolate/result_codec.h"

#include <gtest/gtest.h>

namespace sdpa {
namespace {

// What a worker sends back is what the campaign reads: every field the
// reports use survives the trip, doubles to the bit.
TEST(ResultCodec, ACaseResultSurvivesTheTripToTheBit) {
  CaseResult r;
  r.verdict = Verdict::inaccurate_kernel;
  Finding f;
  f.verdict = Verdict::inaccurate_kernel;
  f.check = Check::accuracy;
  f.detail = "output[0] = 1";
  f.error = 0.1 + 0.2;
  r.findings.push_back(f);
  Decision d;
  d.node = "%sdpa";
  d.rewrite = true;
  d.deciding_rule = "accept";
  d.pass = "p";
  r.decisions.push_back(d);
  r.graph_before = "before";
  r.accuracy = {{"cmsis-nn", DType::f32, 0.25, 0.5, 1.0 / 3.0}, {"portable", DType::f16, 2.0}};
  r.counters = {{"delegated nodes", 3}};
  CaseResult back = result_from_json(result_to_json(r));
  EXPECT_EQ(result_to_json(back), result_to_json(r));
  ASSERT_EQ(back.accuracy.size(), 2u);
  EXPECT_EQ(back.accuracy[0].error_lsb, 1.0 / 3.0);
  EXPECT_EQ(back.accuracy[1].error_lsb, -1.0);
  EXPECT_EQ(back.accuracy[1].dtype, DType::f16);
  EXPECT_EQ(back.findings.at(0).error, 0.1 + 0.2);
  EXPECT_EQ(back.counters.at("delegated nodes"), 3);
  EXPECT_EQ(back.decisions.at(0).node, "%sdpa");
}

// The completeness proof's refutation and the gate's option travel too: a
// worker's decision names the size that broke a forced rewrite.
TEST(ResultCodec, ARefutedDecisionAndProveAcceptedSurviveTheTrip) {
  CaseResult r;
  r.verdict = Verdict::rejected;
  Decision d;
  d.node = "%sdpa";
  d.deciding_rule = "unmasked-lengths";
  d.refuted_at = "s0 = 3 (Lkv = Lq + 1; Lq 2, Lkv 3)";
  r.decisions.push_back(d);
  CaseResult back = result_from_json(result_to_json(r));
  EXPECT_EQ(back.decisions.at(0).refuted_at, d.refuted_at);
  EXPECT_FALSE(back.decisions.at(0).sound_alone);
  CheckOptions o;
  o.prove_accepted = true;
  EXPECT_TRUE(check_options_from_json(check_options_to_json(o)).prove_accepted);
  EXPECT_FALSE(check_options_from_json(check_options_to_json(CheckOptions{})).prove_accepted);
}

// A case the command only counts travels without its findings, rules and
// graphs; what counting reads comes back to the bit.
TEST(ResultCodec, ACountedResultKeepsWhatCountingReads) {
  CaseResult r;
  r.verdict = Verdict::missed_rewrite;
  Finding f;
  f.verdict = Verdict::missed_rewrite;
  r.findings.push_back(f);
  Decision d;
  d.node = "%sdpa";
  d.deciding_rule = "unmasked-lengths";
  d.rules = {{"unmasked-lengths", false, "Lq 2, Lkv 3"}};
  d.refuted_at = "s0 = 3";
  r.decisions = {d, Decision{}};
  r.decisions[1].rewrite = true;
  r.decisions[1].deciding_rule = "accept";
  r.graph_before = "before";
  r.timing = {0.1, 0.2, 0.3, 1.0 / 3.0};
  r.accuracy = {{"cmsis-nn", DType::i8, 0.25, 0.5, 1.0 / 3.0}, {"portable", DType::bf16, 2.0}};
  r.counters = {{"delegated nodes", 3}, {"partitions", -1}};
  r.oracle_cross_checked = false;
  CaseResult back = counted_result_from_bytes(counted_result_to_bytes(r));
  EXPECT_EQ(back.verdict, Verdict::missed_rewrite);
  EXPECT_TRUE(back.findings.empty());
  EXPECT_TRUE(back.graph_before.empty());
  ASSERT_EQ(back.decisions.size(), 2u);
  EXPECT_EQ(back.decisions[0].deciding_rule, "unmasked-lengths");
  EXPECT_FALSE(back.decisions[0].rewrite);
  EXPECT_EQ(back.decisions[0].refuted_at, "s0 = 3");
  EXPECT_TRUE(back.decisions[0].rules.empty());
  EXPECT_TRUE(back.decisions[1].rewrite);
  EXPECT_EQ(back.decisions[1].deciding_rule, "accept");
  EXPECT_EQ(back.timing.generate, 0.1);
  EXPECT_EQ(back.timing.oracle, 0.2);
  EXPECT_EQ(back.timing.kernels, 0.3);
  EXPECT_EQ(back.timing.compare, 1.0 / 3.0);
  ASSERT_EQ(back.accuracy.size(), 2u);
  EXPECT_EQ(back.accuracy[0].kernel_set, "cmsis-nn");
  EXPECT_EQ(back.accuracy[0].dtype, DType::i8);
  EXPECT_EQ(back.accuracy[0].model_ratio, 0.5);
  EXPECT_EQ(back.accuracy[0].error_lsb, 1.0 / 3.0);
  EXPECT_EQ(back.accuracy[1].dtype, DType::bf16);
  EXPECT_EQ(back.accuracy[1].error_lsb, -1.0);
  EXPECT_EQ(back.counters, r.counters);
  EXPECT_FALSE(back.oracle_cross_checked);
  r.oracle_cross_checked = true;
  EXPECT_TRUE(counted_result_from_bytes(counted_result_to_bytes(r)).oracle_cross_checked);
  // Bytes it did not write are an error, not a result.
  std::string bytes = counted_result_to_bytes(r);
  bytes[0] = static_cast<char>(all_verdicts().size());
  EXPECT_THROW(counted_result_from_bytes(bytes), std::runtime_error);
  EXPECT_THROW(counted_result_from_bytes(counted_result_to_bytes(r) + "x"), std::runtime_error);
  EXPECT_THROW(counted_result_from_bytes(counted_result_to_bytes(r).substr(1)), std::runtime_error);
}

// Each option in its own place: a setting and its opposite, so that no two
// options swapped can read back the same.
TEST(ResultCodec, CheckOptionsSurviveBothForms) {
  for (bool first : {false, true}) {
    CheckOptions o;
    o.passes = first;
    o.completeness = !first;
    o.keep_graphs = !first;
    o.prove_accepted = first;
    o.reuse_exact_nodes = first;
    o.oracle_sample = first ? 16 : 1;
    WireWriter out;
    write_check_options(out, o);
    WireReader in(out.bytes(), "test");
    for (const CheckOptions& back : {read_check_options(in), check_options_from_json(check_options_to_json(o))}) {
      EXPECT_EQ(back.passes, first);
      EXPECT_EQ(back.completeness, !first);
      EXPECT_EQ(back.keep_graphs, !first);
      EXPECT_EQ(back.prove_accepted, first);
      EXPECT_EQ(back.reuse_exact_nodes, first);
      EXPECT_EQ(back.oracle_sample, first ? 16 : 1);
    }
    in.finish();
  }
}

}  // namespace
}  // namespace sdpa
