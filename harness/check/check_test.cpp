// The check pipeline against a toy target whose pass is chosen per test:
// every verdict that no modeled target produces still has a case that
// shows it firing.
#include "harness/check/check.h"

#include <gtest/gtest.h>

#include <cmath>

#include "harness/check/check_test_toys.h"
#include "harness/check/proof_sizes.h"
#include "harness/ir/interpreter.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa {
namespace {

using namespace check_toys;

Verdict verdict_of(Rewrite extra, Raise raises = Raise::no, bool invariant = false, bool disagree = false) {
  ToyTarget t(std::move(extra), raises, invariant);
  ToyReference ref(disagree);
  return run_case(t, ref, toy_case()).verdict;
}

TEST(Checks, AFaithfulRewritePasses) { EXPECT_EQ(verdict_of(nullptr), Verdict::pass); }

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

// A stage whose kernel departs from its own arguments is the kernel's
// inaccuracy, named with its set and node; the rewrite stays sound alone.
TEST(Checks, AKernelStageBreachIsAnInaccurateKernelAndTheRewriteStaysSound) {
  ToyReference ref(false);
  ToyTarget t(nullptr, Raise::no, false);
  t.kernel_breach = true;
  CaseResult r = run_case(t, ref, toy_case());
  ASSERT_EQ(r.verdict, Verdict::inaccurate_kernel);
  const Finding* f = r.primary();
  EXPECT_EQ(f->check, Check::accuracy);
  EXPECT_EQ(f->kernel_set, "naive");
  EXPECT_EQ(f->first_node, "%sdpa (" + std::string(kSdpa) + ")");
  EXPECT_EQ(f->detail, "stage %sdpa: output[0] = 1, its reference gives 2");
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_TRUE(r.decisions[0].sound_alone);
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

TEST(Composite, TheModuleGoldenComesFromTheCompositesOutputMap) {
  ToyReference ref(false);
  EXPECT_EQ(run_case(ScaledToyTarget(2.0), ref, toy_case()).verdict, Verdict::pass);
  EXPECT_EQ(run_case(ScaledToyTarget(std::nullopt), ref, toy_case()).verdict, Verdict::entry_disagree);
  EXPECT_EQ(run_case(ScaledToyTarget(3.0), ref, toy_case()).verdict, Verdict::entry_disagree);
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
