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

}  // namespace
}  // namespace sdpa
