// Sampling in a campaign (CheckOptions::oracle_sample): the second oracle's
// cross-check and the entry graph's exact run on one case in N and on the
// cases where it matters, and what a case outside the sample still gets.
#include <gtest/gtest.h>

#include "harness/check/check.h"
#include "harness/check/check_test_toys.h"

namespace sdpa {
namespace {

using namespace check_toys;

// One case in N is cross-checked up front, chosen by its data seed: a
// planted disagreement on a passing case with finite data is found on
// those cases only, and on every case without sampling.
TEST(Checks, TheSecondOracleChecksASampleOfPassingCases) {
  ToyTarget t(nullptr, Raise::no, false);
  TwoOracleReference ref(true);
  int found = 0;
  for (uint64_t seed = 0; seed < 320; ++seed) {
    Case c = toy_case();
    c.data.seed = seed;
    EXPECT_EQ(run_case(t, ref, c).verdict, Verdict::oracle_disagree);
    CaseResult r = run_case(t, ref, c, sampled(16));
    EXPECT_EQ(r.oracle_cross_checked, r.verdict == Verdict::oracle_disagree);
    if (r.verdict == Verdict::oracle_disagree) {
      ++found;
    } else {
      EXPECT_EQ(r.verdict, Verdict::pass);
    }
  }
  EXPECT_GT(found, 5);   // about 20 of 320
  EXPECT_LT(found, 50);
}

// A case with a finding gets both oracles' word whatever the sample, and
// its result is the one full cross-checking gives: the disagreement alone
// where they disagree, the finding where they agree.
TEST(Checks, AFailingCaseIsCrossCheckedWhateverTheSample) {
  auto unsound = [](Graph& g, ValueRef x) { return g.call("aten.mul.Scalar", {x, 1.5}, {}, {g.info(x)}); };
  ToyTarget t(unsound, Raise::no, false);
  for (bool disagree : {false, true}) {
    TwoOracleReference ref(disagree);
    for (uint64_t seed = 0; seed < 40; ++seed) {
      Case c = toy_case();
      c.data.seed = seed;
      CaseResult every = run_case(t, ref, c), few = run_case(t, ref, c, sampled(1000000));
      EXPECT_EQ(few.verdict, disagree ? Verdict::oracle_disagree : Verdict::unsound_rewrite);
      EXPECT_TRUE(few.oracle_cross_checked);
      ASSERT_EQ(few.findings.size(), every.findings.size());
      for (size_t i = 0; i < few.findings.size(); ++i)
        EXPECT_EQ(few.findings[i].signature(), every.findings[i].signature());
      EXPECT_EQ(few.decisions.size(), every.decisions.size());
    }
  }
}

// Non-finite data is where oracles are most likely to part: such a case
// is cross-checked even when it passes.
TEST(Checks, ACaseWithNonFiniteDataIsCrossChecked) {
  ToyTarget t(nullptr, Raise::no, false);
  TwoOracleReference agree(false), disagree(true);
  Case c = toy_case();
  c.data.special = SpecialData{SpecialValue::nan, "v", SpecialPlace::elements, 1};
  for (uint64_t seed = 0; seed < 40; ++seed) {
    c.data.seed = seed;
    EXPECT_EQ(run_case(t, disagree, c, sampled(1000000)).verdict, Verdict::oracle_disagree);
    CaseResult r = run_case(t, agree, c, sampled(1000000));
    EXPECT_TRUE(r.oracle_cross_checked);
  }
  Case finite = toy_case();
  const int before = agree.cross_checks;
  CaseResult r = run_case(t, agree, finite, sampled(1000000));
  EXPECT_EQ(r.verdict, Verdict::pass);
  EXPECT_EQ(agree.cross_checks, before + (r.oracle_cross_checked ? 1 : 0));
}

// The entry graph's exact run is checked against the oracles on the
// cross-check sample; elsewhere the golden stands in for it. An entry model
// that is wrong (x2 where the module means x3) behind a rewrite that lands
// on the golden (x1.5 more) is found on the sampled cases only, and on
// every case without sampling.
TEST(EntrySample, TheEntryGraphIsCheckedOnASampleOfPassingCases) {
  auto times_1_5 = [](Graph& g, ValueRef x) { return g.call("aten.mul.Scalar", {x, 1.5}, {}, {g.info(x)}); };
  ScaledToyTarget t(3.0, times_1_5);
  ToyReference ref(false);
  int found = 0;
  for (uint64_t seed = 0; seed < 320; ++seed) {
    Case c = toy_case();
    c.data.seed = seed;
    EXPECT_EQ(run_case(t, ref, c).verdict, Verdict::entry_disagree);
    const Verdict v = run_case(t, ref, c, sampled(16)).verdict;
    if (v == Verdict::entry_disagree) ++found;
    else EXPECT_EQ(v, Verdict::pass);
  }
  EXPECT_GT(found, 5);  // about 20 of 320
  EXPECT_LT(found, 50);
  // Non-finite data is checked on every case, as by the second oracle.
  Case nan_case = toy_case();
  nan_case.data.special = SpecialData{SpecialValue::nan, "v", SpecialPlace::elements, 1};
  for (uint64_t seed = 0; seed < 40; ++seed) {
    nan_case.data.seed = seed;
    EXPECT_EQ(run_case(t, ref, nan_case, sampled(1000000)).verdict, Verdict::entry_disagree);
  }
}

// The entry graph runs up front on the cases the second oracle
// cross-checks up front: one sample, one hash.
TEST(EntrySample, TheSampleIsTheSecondOraclesSample) {
  auto times_1_5 = [](Graph& g, ValueRef x) { return g.call("aten.mul.Scalar", {x, 1.5}, {}, {g.info(x)}); };
  ScaledToyTarget wrong_entry(3.0, times_1_5);
  ToyTarget faithful(nullptr, Raise::no, false);
  ToyReference ref(false);
  TwoOracleReference disagree(true);
  for (uint64_t seed = 0; seed < 320; ++seed) {
    Case c = toy_case();
    c.data.seed = seed;
    EXPECT_EQ(run_case(wrong_entry, ref, c, sampled(16)).verdict == Verdict::entry_disagree,
              run_case(faithful, disagree, c, sampled(16)).verdict == Verdict::oracle_disagree);
  }
}

// A pass that raises is a finding: the entry graph then runs, and a wrong
// entry model is what the case reports.
TEST(EntrySample, ACaseWhosePassRaisesRunsItsEntryGraph) {
  ScaledToyTarget t(3.0, nullptr, Raise::error);
  ToyReference ref(false);
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Case c = toy_case();
    c.data.seed = seed;
    EXPECT_EQ(run_case(t, ref, c, sampled(1000000)).verdict, Verdict::entry_disagree);
  }
}

// An entry model 9.9e-10 of scale off the golden passes the entry check;
// a rewrite 9e-10 off the entry refines it, but is past the 1e-9 line
// against the golden. A case whose finding was judged against the golden
// so close to the line that the entry graph's run could change the
// verdict is checked again in full: its verdict is the full check's.
TEST(EntrySample, AFindingJudgedAgainstTheGoldenIsCheckedAgainstTheEntryGraph) {
  auto slightly_less = [](Graph& g, ValueRef x) { return g.call("aten.mul.Scalar", {x, 1.0 - 9e-10}, {}, {g.info(x)}); };
  ScaledToyTarget t(2.0 * (1.0 + 9.9e-10), slightly_less);
  ToyReference ref(false);
  for (uint64_t seed = 0; seed < 200; ++seed) {
    Case c = toy_case();
    c.data.seed = seed;
    CaseResult every = run_case(t, ref, c), few = run_case(t, ref, c, sampled(1000000));
    EXPECT_EQ(every.verdict, Verdict::pass);
    EXPECT_EQ(few.verdict, every.verdict) << "seed " << seed;
    EXPECT_EQ(few.findings.size(), every.findings.size());
    EXPECT_EQ(few.decisions.size(), every.decisions.size());
  }
}

// A case with a finding has its entry graph run whatever the sample, and
// its result is the one the full check gives: the entry's disagreement
// alone where the entry model is wrong, the finding where it is right.
TEST(EntrySample, AFailingCaseRunsItsEntryGraphWhateverTheSample) {
  auto times_1_25 = [](Graph& g, ValueRef x) { return g.call("aten.mul.Scalar", {x, 1.25}, {}, {g.info(x)}); };
  for (double factor : {2.0, 3.0}) {
    ScaledToyTarget t(factor, times_1_25);
    ToyReference ref(false);
    for (uint64_t seed = 0; seed < 40; ++seed) {
      Case c = toy_case();
      c.data.seed = seed;
      CaseResult every = run_case(t, ref, c), few = run_case(t, ref, c, sampled(1000000));
      EXPECT_EQ(few.verdict, factor == 2.0 ? Verdict::unsound_rewrite : Verdict::entry_disagree);
      ASSERT_EQ(few.findings.size(), every.findings.size());
      for (size_t i = 0; i < few.findings.size(); ++i) {
        EXPECT_EQ(few.findings[i].signature(), every.findings[i].signature());
        EXPECT_EQ(few.findings[i].detail, every.findings[i].detail);
      }
      EXPECT_EQ(few.decisions.size(), every.decisions.size());
    }
  }
}

}  // namespace
}  // namespace sdpa
