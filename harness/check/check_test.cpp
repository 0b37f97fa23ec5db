// The check pipeline against a toy target whose pass is chosen per test:
// every verdict that no modeled target produces still has a case that
// shows it firing.
#include "harness/check/check.h"

#include <gtest/gtest.h>

#include <cmath>

#include "harness/check/proof_sizes.h"
#include "harness/ir/interpreter.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa {
namespace {

constexpr const char* kSdpa = "aten.scaled_dot_product_attention.default";

Case toy_case() {
  Case c;
  c.dtype = DType::f64;
  c.q_heads = c.kv_heads = 1;
  c.q_len = 2;
  c.kv_len = 3;
  c.head_dim = 4;
  c.value_dim = 5;
  c.data.seed = 17;
  return c;
}

// Golden from the exact reference kernel; a huge error bound; optionally a
// planted disagreement between "oracles".
class ToyReference : public ReferenceModel {
 public:
  explicit ToyReference(bool disagree) : disagree_(disagree) {}
  std::string name() const override { return "toy"; }
  Golden golden(const Case& c, const CaseTensors& t, const Assignment& at) const override {
    Graph g;
    ValueRef q = g.placeholder("q", {c.dtype, query_shape(c)}), k = g.placeholder("k", {c.dtype, key_shape(c)}),
             v = g.placeholder("v", {c.dtype, value_shape(c)});
    g.outputs = {g.call(kSdpa, {q, k, v, None{}, 0.0, false}, {}, {{c.dtype, output_shape(c)}})};
    Golden out;
    out.out = interpret(g, exact_kernels(), {{"q", t.q}, {"k", t.k}, {"v", t.v}}, {at, c.data.seed}).outputs[0];
    out.fully_masked.assign(static_cast<size_t>(out.out.numel() / c.value_dim), 0);
    if (disagree_) out.disagreement = "planted";
    return out;
  }
  ErrorBound bound(const Case&, const CaseTensors&, const Golden& g,
                   const KernelNumerics&) const override {
    ErrorBound b;
    b.row_bound.assign(g.fully_masked.size(), 1.0);
    b.row_typical = b.row_bound;
    return b;
  }

 private:
  bool disagree_;
};

using Rewrite = std::function<ValueRef(Graph& out, ValueRef sdpa_output)>;

enum class Raise { no, error, unsupported };

// Rewrites the SDPA node into itself followed by `extra` (or raises).
class ToyPass : public Pass {
 public:
  ToyPass(Rewrite extra, Raise raises) : extra_(std::move(extra)), raises_(raises) {}
  std::string name() const override { return "toy"; }
  using Pass::run;
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl&) const override {
    if (raises_ == Raise::error) throw std::runtime_error("toy pass failed");
    if (raises_ == Raise::unsupported) throw PassUnsupported("Mask rank is not 2");
    Result r;
    GraphRewriter rw(g);
    for (const Node& n : g.nodes) {
      if (n.op != kSdpa) {
        rw.copy(n);
        continue;
      }
      GuardContext guard(env, "%" + n.name);
      r.decisions.push_back(guard.finish());
      ValueRef same = rw.copy(n);
      rw.replace(n, {extra_ ? extra_(rw.out(), same) : same});
    }
    r.graph = rw.finish();
    return r;
  }

 private:
  Rewrite extra_;
  Raise raises_;
};

class ToyTarget : public Target {
 public:
  ToyTarget(Rewrite extra, Raise raises, bool broken_invariant)
      : pass_(std::move(extra), raises), broken_invariant_(broken_invariant) {}
  std::string name() const override { return "toy"; }
  const Options& options() const override { return options_; }
  CaseSpace case_space() const override { return {}; }
  Graph entry(const Case& c) const override {
    Graph g;
    ValueRef q = g.placeholder("q", {c.dtype, query_shape(c)}), k = g.placeholder("k", {c.dtype, key_shape(c)}),
             v = g.placeholder("v", {c.dtype, value_shape(c)});
    g.outputs = {g.call(kSdpa, {q, k, v, None{}, 0.0, false}, {}, {{c.dtype, output_shape(c)}})};
    return g;
  }
  std::vector<const Pass*> passes() const override { return {&pass_}; }
  std::vector<KernelSetInfo> kernel_sets() const override {
    return {{&naive_kernels(), {DType::f64}, "naive",
             [](const Case&, const Graph&) { return KernelNumerics::naive(DType::f64); }}};
  }
  const KernelSet& baseline_kernels() const override { return naive_kernels(); }
  std::vector<std::string> invariants(const Case&, const Graph&, const Graph&) const override {
    if (broken_invariant_) return {"a node the rewrite must remove is left"};
    return {};
  }

 private:
  Options options_;
  ToyPass pass_;
  bool broken_invariant_;
};

Verdict verdict_of(Rewrite extra, Raise raises = Raise::no, bool invariant = false, bool disagree = false) {
  ToyTarget t(std::move(extra), raises, invariant);
  ToyReference ref(disagree);
  return run_case(t, ref, toy_case()).verdict;
}

TEST(Checks, AFaithfulRewritePasses) { EXPECT_EQ(verdict_of(nullptr), Verdict::pass); }

// ToyReference with its disagreement found by a second oracle that runs
// only when asked (cross_check), counted.
class TwoOracleReference : public ToyReference {
 public:
  explicit TwoOracleReference(bool disagree) : ToyReference(false), disagree_(disagree) {}
  Golden golden(const Case& c, const CaseTensors& t, const Assignment& at) const override {
    Golden g = unchecked_golden(c, t, at);
    cross_check(c, t, at, g);
    return g;
  }
  Golden unchecked_golden(const Case& c, const CaseTensors& t, const Assignment& at) const override {
    Golden g = ToyReference::golden(c, t, at);
    g.cross_checked = false;
    return g;
  }
  void cross_check(const Case&, const CaseTensors&, const Assignment&, Golden& g) const override {
    ++cross_checks;
    if (disagree_) g.disagreement = "planted";
    g.cross_checked = true;
  }
  mutable int cross_checks = 0;

 private:
  bool disagree_;
};

CheckOptions sampled(int64_t n) {
  CheckOptions o;
  o.oracle_sample = n;
  return o;
}

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

TEST(Checks, OracleDisagreementIsTheVerdict) {
  EXPECT_EQ(verdict_of(nullptr, Raise::no, false, true), Verdict::oracle_disagree);
}

TEST(Checks, APassThatRaisesIsAnUnexpectedError) {
  EXPECT_EQ(verdict_of(nullptr, Raise::error), Verdict::unexpected_error);
}

TEST(Checks, APassThatRaisesOnAFormItDoesNotTakeMakesTheCaseUnsupported) {
  ToyTarget t(nullptr, Raise::unsupported, false);
  ToyReference ref(false);
  CaseResult r = run_case(t, ref, toy_case());
  ASSERT_EQ(r.verdict, Verdict::unsupported);
  EXPECT_EQ(r.primary()->detail, "pass toy raised: Mask rank is not 2");
}

TEST(Checks, ABrokenInvariantIsReported) {
  EXPECT_EQ(verdict_of(nullptr, Raise::no, true), Verdict::broken_invariant);
}

// A lone accepted node is judged by the rule every forced or held rewrite
// is (refines(): invariants included), so the gate sees the same decision
// as unsound whether its pass runs alone or beside another.
TEST(Checks, ALoneDecisionThatBreaksAnInvariantIsNotSoundAlone) {
  ToyReference ref(false);
  for (bool invariant : {false, true}) {
    ToyTarget t(nullptr, Raise::no, invariant);
    CaseResult r = run_case(t, ref, toy_case());
    ASSERT_EQ(r.decisions.size(), 1u);
    EXPECT_TRUE(r.decisions[0].rewrite);
    EXPECT_EQ(r.decisions[0].sound_alone, !invariant);
  }
}

TEST(Checks, AnOutputOfAnotherDtypeIsADtypeMismatch) {
  EXPECT_EQ(verdict_of([](Graph& g, ValueRef x) {
              return g.call("aten._to_copy.default", {x}, {{"dtype", DType::f32}}, {{DType::f32, g.info(x).shape}});
            }),
            Verdict::dtype_mismatch);
}

TEST(Checks, AnOutputOfAnotherShapeIsAShapeMismatch) {
  EXPECT_EQ(verdict_of([](Graph& g, ValueRef x) {
              SymShape s = g.info(x).shape;
              std::swap(s[s.size() - 2], s[s.size() - 1]);
              return g.call("aten.transpose.int", {x, int64_t{-2}, int64_t{-1}}, {}, {{g.info(x).dtype, s}});
            }),
            Verdict::shape_mismatch);
}

// Two SDPA nodes whose sum is the output; the guard keeps both (or, with
// `accept`, takes both). Rewriting %a alone is sound, rewriting %b alone (a
// rewrite that scales by 1.5) is not.
class TwoNodeTarget : public Target {
 public:
  explicit TwoNodeTarget(bool accept = false) : pass_(accept) {}
  std::string name() const override { return "toy-two"; }
  const Options& options() const override { return options_; }
  CaseSpace case_space() const override { return {}; }
  Graph entry(const Case& c) const override {
    Graph g;
    ValueRef q = g.placeholder("q", {c.dtype, query_shape(c)}), k = g.placeholder("k", {c.dtype, key_shape(c)}),
             v = g.placeholder("v", {c.dtype, value_shape(c)});
    ValueInfo out{c.dtype, output_shape(c)};
    ValueRef a = g.call(kSdpa, {q, k, v, None{}, 0.0, false}, {}, {out}, "a");
    ValueRef b = g.call(kSdpa, {q, k, v, None{}, 0.0, false}, {}, {out}, "b");
    g.outputs = {g.call("aten.add.Tensor", {a, b}, {}, {out})};
    return g;
  }
  class KeepBoth : public Pass {
   public:
    explicit KeepBoth(bool accept) : accept_(accept) {}
    bool accept_;
    std::string name() const override { return "keep-both"; }
    using Pass::run;
    Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override {
      Result r;
      GraphRewriter rw(g);
      for (const Node& n : g.nodes) {
        if (n.op != kSdpa) {
          rw.copy(n);
          continue;
        }
        GuardContext guard(env, "%" + n.name);
        guard.rule("never", accept_);
        Decision d = guard.finish();
        d.forced = !d.rewrite && control.rewrites(d);
        r.decisions.push_back(d);
        ValueRef same = rw.copy(n);
        if (control.rewrites(d) && n.name == "b")
          rw.replace(n, {rw.out().call("aten.mul.Scalar", {same, 1.5}, {}, {n.outputs[0]})});
      }
      r.graph = rw.finish();
      return r;
    }
  } pass_;
  std::vector<const Pass*> passes() const override { return {&pass_}; }
  std::vector<KernelSetInfo> kernel_sets() const override {
    return {{&naive_kernels(), {DType::f64}, "naive",
             [](const Case&, const Graph&) { return KernelNumerics::naive(DType::f64); }}};
  }
  const KernelSet& baseline_kernels() const override { return naive_kernels(); }

 private:
  Options options_;
};

// Golden = the target's entry graph run exactly (an entry that is not one
// SDPA call), with a loose bound.
class EntryReference : public ReferenceModel {
 public:
  explicit EntryReference(const Target& t) : t_(t) {}
  std::string name() const override { return "entry"; }
  Golden golden(const Case& c, const CaseTensors& t, const Assignment& at) const override {
    Golden out;
    out.out = interpret(t_.entry(c), exact_kernels(), {{"q", t.q}, {"k", t.k}, {"v", t.v}}, {at, c.data.seed})
                  .outputs[0];
    out.fully_masked.assign(static_cast<size_t>(out.out.numel() / c.value_dim), 0);
    return out;
  }
  ErrorBound bound(const Case&, const CaseTensors&, const Golden& g, const KernelNumerics&) const override {
    ErrorBound b;
    b.row_bound.assign(g.fully_masked.size(), 1.0);
    b.row_typical = b.row_bound;
    return b;
  }

 private:
  const Target& t_;
};

TEST(Completeness, EachKeptNodeIsForcedOnItsOwnAndAllTogether) {
  TwoNodeTarget t;
  EntryReference ref(t);
  CaseResult r = run_case(t, ref, toy_case());
  ASSERT_EQ(r.decisions.size(), 2u);
  EXPECT_EQ(r.decisions[0].pass, "keep-both");
  EXPECT_TRUE(r.decisions[0].sound_alone);   // %a forced alone: sound
  EXPECT_FALSE(r.decisions[1].sound_alone);  // %b forced alone: scaled by 1.5
  ASSERT_EQ(r.verdict, Verdict::missed_rewrite);
  int missed = 0;
  for (const auto& f : r.findings)
    if (f.verdict == Verdict::missed_rewrite) {
      ++missed;
      EXPECT_NE(f.detail.find("%a"), std::string::npos) << f.detail;
    }
  EXPECT_EQ(missed, 1) << "%b alone and both together are unsound";
}

TEST(Completeness, EachAcceptedNodeIsJudgedAloneWithTheOthersHeld) {
  TwoNodeTarget t(/*accept=*/true);
  EntryReference ref(t);
  CaseResult r = run_case(t, ref, toy_case());
  ASSERT_EQ(r.decisions.size(), 2u);
  EXPECT_EQ(r.verdict, Verdict::unsound_rewrite);  // both rewritten: the case is unsound
  EXPECT_TRUE(r.decisions[0].sound_alone);         // %a rewritten alone, %b held: sound
  EXPECT_FALSE(r.decisions[1].sound_alone);
}

// One SDPA node the guard always keeps; its forced rewrite scales the
// output by `factor` (1: a rewrite sound at every size and on all data).
class KeepTarget : public Target {
 public:
  explicit KeepTarget(double factor) : pass_(factor) {}
  std::string name() const override { return "toy-keep"; }
  const Options& options() const override { return options_; }
  CaseSpace case_space() const override { return {}; }
  Graph entry(const Case& c) const override { return ToyTarget(nullptr, Raise::no, false).entry(c); }
  class KeepPass : public Pass {
   public:
    explicit KeepPass(double factor) : factor_(factor) {}
    std::string name() const override { return "keep"; }
    using Pass::run;
    Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override {
      Result r;
      GraphRewriter rw(g);
      for (const Node& n : g.nodes) {
        if (n.op != kSdpa) {
          rw.copy(n);
          continue;
        }
        GuardContext guard(env, "%" + n.name);
        guard.rule("never", false);
        Decision d = guard.finish();
        d.forced = control.rewrites(d);
        r.decisions.push_back(d);
        ValueRef same = rw.copy(n);
        if (d.forced) rw.replace(n, {rw.out().call("aten.mul.Scalar", {same, factor_}, {}, {n.outputs[0]})});
      }
      r.graph = rw.finish();
      return r;
    }

   private:
    double factor_;
  } pass_;
  std::vector<const Pass*> passes() const override { return {&pass_}; }
  std::vector<KernelSetInfo> kernel_sets() const override {
    return {{&naive_kernels(), {DType::f64}, "naive",
             [](const Case&, const Graph&) { return KernelNumerics::naive(DType::f64); }}};
  }
  const KernelSet& baseline_kernels() const override { return naive_kernels(); }

 private:
  Options options_;
};

// One query, one key, one value of integers in {-1, 0, 1}, on the first
// data seed from 1 whose v is 0: that draw hides any scaling of the output.
Case zero_value_case() {
  Case c = toy_case();
  c.q_len = c.kv_len = 1;
  c.head_dim = c.value_dim = 1;
  c.data.distribution = Distribution::integers;
  for (c.data.seed = 1; make_case_tensors(c, {}).v.data[0] != 0.0; ++c.data.seed) {
  }
  return c;
}

TEST(CompletenessProof, DataThatHidesTheDifferenceIsCaughtByTheSecondDraw) {
  const Case c = zero_value_case();
  ToyReference ref(false);
  CaseResult r = run_case(KeepTarget(1.5), ref, c);
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_EQ(r.verdict, Verdict::rejected) << "v = 0 on the case's draw: 0 * 1.5 = 0 there";
  EXPECT_FALSE(r.decisions[0].sound_alone);
  EXPECT_EQ(r.decisions[0].refuted_at, "static sizes (the case's sizes; Lq 1, Lkv 1), on the second data draw (seed " +
                                           std::to_string(second_draw(c).data.seed) + ")");
}

TEST(CompletenessProof, ARewriteSoundAtEverySizeAndOnBothDrawsStaysMissed) {
  // Lkv = s0 in [1, 6], run at 3 only: the proof adds 1, 2, 4, 6 and the
  // second draw, and the identity rewrite holds at each.
  Case c = toy_case();
  c.kv_len = SymExpr::symbol("s0");
  c.symbols = {{"s0", {3, 1, 6}}};
  c.runtime = {{{"s0", 3}}};
  ToyReference ref(false);
  CaseResult r = run_case(KeepTarget(1.0), ref, c);
  ASSERT_EQ(r.verdict, Verdict::missed_rewrite);
  EXPECT_TRUE(r.decisions[0].sound_alone);
  EXPECT_TRUE(r.decisions[0].refuted_at.empty());
  const std::string& detail = r.primary()->detail;
  EXPECT_NE(detail.find("at 4 more size(s) the symbols allow"), std::string::npos) << detail;
  EXPECT_NE(detail.find("on a second data draw"), std::string::npos) << detail;
}

TEST(CompletenessProof, AnAcceptedNodeIsProvenOnlyWhenAsked) {
  // The accepted node's rewrite scales by 1.5 where v is 0: sound at the
  // runtime sizes (the case passes), refuted by the second draw when the
  // gate asks for the proof.
  ToyTarget t([](Graph& g, ValueRef x) { return g.call("aten.mul.Scalar", {x, 1.5}, {}, {g.info(x)}); }, Raise::no,
              false);
  ToyReference ref(false);
  CaseResult plain = run_case(t, ref, zero_value_case());
  EXPECT_EQ(plain.verdict, Verdict::pass);
  EXPECT_TRUE(plain.decisions.at(0).sound_alone);
  CheckOptions prove;
  prove.prove_accepted = true;
  CaseResult proven = run_case(t, ref, zero_value_case(), prove);
  EXPECT_EQ(proven.verdict, Verdict::pass) << "the verdict is judged at the runtime sizes";
  EXPECT_FALSE(proven.decisions.at(0).sound_alone);
  EXPECT_NE(proven.decisions.at(0).refuted_at.find("second data draw"), std::string::npos);
}

TEST(Checks, AWrongValueIsAnUnsoundRewrite) {
  EXPECT_EQ(verdict_of([](Graph& g, ValueRef x) {
              return g.call("aten.mul.Scalar", {x, 1.5}, {}, {g.info(x)});
            }),
            Verdict::unsound_rewrite);
}

// A module around the call: the entry graph scales the SDPA output by 2
// (aten.mul.Scalar). Its composite tells the harness so; without one, or
// with a wrong output map, the entry graph differs from the golden.
class ScaledToyTarget : public Target {
 public:
  explicit ScaledToyTarget(std::optional<double> composite_factor, Rewrite extra = nullptr, Raise raises = Raise::no)
      : factor_(composite_factor), pass_(std::move(extra), raises) {}
  std::string name() const override { return "toy-module"; }
  const Options& options() const override { return options_; }
  CaseSpace case_space() const override { return {}; }
  Graph entry(const Case& c) const override {
    Graph g;
    ValueRef q = g.placeholder("q", {c.dtype, query_shape(c)}), k = g.placeholder("k", {c.dtype, key_shape(c)}),
             v = g.placeholder("v", {c.dtype, value_shape(c)});
    ValueRef a = g.call(kSdpa, {q, k, v, None{}, 0.0, false}, {}, {{c.dtype, output_shape(c)}});
    g.outputs = {g.call("aten.mul.Scalar", {a, 2.0}, {}, {{c.dtype, output_shape(c)}})};
    return g;
  }
  std::optional<Composite> composite(const Case& c) const override {
    if (!factor_) return std::nullopt;
    Composite m;
    m.sdpa_tensors = [c](const Assignment& at) { return make_case_tensors(c, at); };
    m.output = [f = *factor_](Tensor a) {
      for (double& x : a.data) x *= f;
      return a;
    };
    m.bound = [](ErrorBound b, const CaseTensors&, const Golden&, const Graph&) {
      for (double& x : b.row_bound) x *= 2;
      for (double& x : b.row_typical) x *= 2;
      return b;
    };
    m.rows_of = [](int64_t row) { return std::vector<int64_t>{row}; };
    m.scale = [f = *factor_](const CaseTensors& t) { return std::fabs(f) * t.v.max_abs(); };
    return m;
  }
  std::vector<const Pass*> passes() const override { return {&pass_}; }
  std::vector<KernelSetInfo> kernel_sets() const override {
    return {{&naive_kernels(), {DType::f64}, "naive",
             [](const Case&, const Graph&) { return KernelNumerics::naive(DType::f64); }}};
  }
  const KernelSet& baseline_kernels() const override { return naive_kernels(); }

 private:
  Options options_;
  std::optional<double> factor_;
  ToyPass pass_;
};

TEST(Composite, TheModuleGoldenComesFromTheCompositesOutputMap) {
  ToyReference ref(false);
  EXPECT_EQ(run_case(ScaledToyTarget(2.0), ref, toy_case()).verdict, Verdict::pass);
  EXPECT_EQ(run_case(ScaledToyTarget(std::nullopt), ref, toy_case()).verdict, Verdict::entry_disagree);
  EXPECT_EQ(run_case(ScaledToyTarget(3.0), ref, toy_case()).verdict, Verdict::entry_disagree);
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

TEST(Composite, AnOutputRowIsFullyMaskedWhenEveryRowItReadsIs) {
  Golden sdpa;
  sdpa.out = Tensor(DType::f64, {4, 1}, 1.0);
  sdpa.fully_masked = {1, 1, 0, 1};
  sdpa.row_max_score = {-INFINITY, -INFINITY, 3.0, -INFINITY};
  Composite m;
  m.output = [](const Tensor&) { return Tensor(DType::f64, {2, 3}); };
  m.rows_of = [](int64_t row) { return std::vector<int64_t>{2 * row, 2 * row + 1}; };
  const Golden g = composite_golden(m, sdpa);
  EXPECT_EQ(g.out.shape, (Shape{2, 3}));
  EXPECT_EQ(g.fully_masked, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(g.row_max_score[1], 3.0);
  EXPECT_EQ(g.row_max_score[0], -INFINITY);
}

// A type error the pipeline's retrace raises is a dtype-mismatch naming
// the node; the graph is never run.
class TypeErrorTarget : public ToyTarget {
 public:
  TypeErrorTarget() : ToyTarget(nullptr, Raise::no, false) {}
  std::vector<std::string> type_errors(const Graph& g) const override {
    return {"type error at %" + g.nodes.back().name + ": expected scalar type torch.int8 but found torch.int32"};
  }
};

TEST(Checks, ATypeErrorOfTheRetraceIsADtypeMismatch) {
  ToyReference ref(false);
  CaseResult r = run_case(TypeErrorTarget(), ref, toy_case());
  EXPECT_EQ(r.verdict, Verdict::dtype_mismatch);
  EXPECT_NE(r.primary()->detail.find("expected scalar type torch.int8"), std::string::npos);
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_FALSE(r.decisions[0].sound_alone);
}

}  // namespace
}  // namespace sdpa
