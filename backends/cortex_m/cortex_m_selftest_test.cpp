// Campaigns on the cortex-m target: the default pipeline is clean; each
// mutant (non-proportional qparams, single rounding, the shared-decomp
// emitter's) and each weakened guard rule is caught and shrunk to a small case.
#include <gtest/gtest.h>

#include <set>

#include "backends/all_targets.h"
#include "backends/target_fixture.h"
#include "backends/cortex_m/cortex_m_ops.h"
#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "oracles/dual_oracle.h"
#include "reports/run_summary.h"

namespace sdpa::cortex_m {
namespace {

struct Fixture : TargetFixture {
  // Without the tiny (1e-8) scale, whose known finding TinyScaleRoundsTheScaleConstantToZero shows.
  CaseGeneratorFactory no_tiny = [](const CaseSpace& s) {
    GenPolicy p = GenPolicy::defaults();
    decltype(p.scale_weights) kept;
    for (const auto& w : p.scale_weights)
      if (w.first != GenPolicy::ScaleKind::tiny) kept.push_back(w);
    p.scale_weights = kept;
    return gen_case(p, s);
  };

  TargetRun campaign(const Options& options, int64_t cases, int64_t stop_after = 0, CheckOptions check = {},
                     bool tiny = true) const {
    auto target = registry.make("cortex-m", options);
    CampaignOptions o;
    o.seed = 20261130;
    o.cases = cases;
    o.stop_after = stop_after;
    o.check = check;
    return run_target_campaign(*target, *reference, tiny ? generators : no_tiny, o);
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

bool small(const Case& c) {
  ConcreteSizes s = concrete_sizes(c, c.runs()[0]);
  return s.batch_numel() <= 2 && s.Hq <= 4 && s.Lq <= 4 && s.Lkv <= 4 && s.E <= 8 && s.Ev <= 8;
}

void print_verdicts(const char* what, const TargetRun& r) {
  std::string s;
  for (const auto& [v, n] : r.verdicts) s += " " + v + "=" + std::to_string(n);
  std::printf("%s: %lld cases:%s\n", what, static_cast<long long>(r.cases), s.c_str());
}

TEST(CortexMDecompose, NoCrashUnsoundOrUnexpectedErrorIn1000Cases) {
  TargetRun r = fixture().campaign({}, 1000, 0, {}, /*tiny=*/false);
  print_verdicts("cortex-m default", r);
  for (const char* v : {"crash", "unexpected-error", "entry-disagree", "oracle-disagree", "unsound-rewrite",
                        "invalid-rewrite", "inaccurate-kernel", "nan-mismatch", "shape-mismatch", "dtype-mismatch"})
    EXPECT_EQ(r.verdicts[v], 0) << v << "\n" << run_summary_text({r});
  // The one broken invariant integer-valued data can show: a zero-point tie (ZeroPointTie).
  for (const auto& w : r.findings) {
    if (w.verdict == "broken-invariant") {
      EXPECT_NE(w.finding.detail.find("relative error 0,"), std::string::npos) << w.finding.detail;
    }
  }
  EXPECT_GT(r.verdicts["pass"], 50) << run_summary_text({r});
  EXPECT_GT(r.guard_rules["no-mask"], 0) << run_summary_text({r});
}

// space=eligible draws only calls DecomposeSDPAPass takes: every decision
// accepts, and the int8 pipeline's invariants and stage bounds hold.
TEST(CortexMDecompose, TheEligibleSpaceDrawsOnlyCallsTheDecompositionTakes) {
  TargetRun r = fixture().campaign({{"space", "eligible"}}, 500, 0, {}, /*tiny=*/false);
  print_verdicts("cortex-m space=eligible", r);
  EXPECT_EQ(r.verdicts["rejected"] + r.verdicts["missed-rewrite"] + r.verdicts["unsupported"], 0)
      << run_summary_text({r});
  for (const auto& [rule, n] : r.guard_rules) EXPECT_EQ(rule, "accept") << n;
  EXPECT_GE(r.verdicts["pass"], 490) << run_summary_text({r});
}

// The int8 output's step comes from the dequantize the lowered graph ends
// with; a float pipeline (quantize=off) has no LSB to count in.
TEST(CortexMDecompose, TheEndToEndErrorIsCountedInOutputLsb) {
  Case c;
  c.q_len = c.kv_len = 4;
  c.head_dim = c.value_dim = 8;
  c.data.seed = 3;
  CaseResult r = run_case(*fixture().registry.make("cortex-m", {}), *fixture().reference, c);
  ASSERT_EQ(r.verdict, Verdict::pass);
  ASSERT_EQ(r.accuracy.size(), 1u);
  EXPECT_EQ(r.accuracy[0].kernel_set, "cmsis-nn");
  EXPECT_GT(r.accuracy[0].error_lsb, 0.0);
  EXPECT_LT(r.accuracy[0].error_lsb, 8.0);
  std::printf("error %.3f LSB of the output\n", r.accuracy[0].error_lsb);
  CaseResult f = run_case(*fixture().registry.make("cortex-m", {{"quantize", "off"}}), *fixture().reference, c);
  ASSERT_EQ(f.accuracy.size(), 1u);
  EXPECT_EQ(f.accuracy[0].error_lsb, -1.0);
}

TEST(CortexMDecompose, IdentityWithPassesOffPasses) {
  CheckOptions identity;
  identity.passes = false;
  TargetRun r = fixture().campaign({}, 200, 0, identity);
  print_verdicts("cortex-m identity", r);
  EXPECT_EQ(r.verdicts["pass"], 200) << run_summary_text({r});
}

// An attention scale of 1e-8: its int8 constant, observed as an activation,
// floors at scale eps and holds code -128, its zero point, so the device
// multiplies the scores by 0: the lowered graph no longer means the call
// (unsound-rewrite, a few 1e-9 off on normal data). Where the scores are
// all zero (integer data, q·k = 0) that changes nothing: pass. (With the
// symmetric |c|/127 constant the model gave before, this MUL's multiplier
// needed a shift of -33 and the runtime aborted.)
TEST(CortexMKnownFindings, TinyScaleRoundsTheScaleConstantToZero) {
  auto t = fixture().registry.make("cortex-m", {});
  Case c;
  c.kv_len = 4;
  c.scale = 1e-8;
  c.data.seed = 5054598892043641;
  CaseResult r = run_case(*t, *fixture().reference, c);
  ASSERT_EQ(r.verdict, Verdict::unsound_rewrite) << verdict_name(r.verdict);
  EXPECT_EQ(r.primary()->check, Check::soundness);
  // The finding names the constant it changed (Target::constants).
  EXPECT_EQ(r.primary()->detail.rfind("scale 1e-08 in the entry, 0 after the rewrite (", 0), 0u) << r.primary()->detail;
  Case zero_scores;
  zero_scores.scale = 1e-8;
  zero_scores.data.distribution = Distribution::integers;
  zero_scores.data.seed = 5219641430841714;
  EXPECT_EQ(run_case(*t, *fixture().reference, zero_scores).verdict, Verdict::pass);
}

// What shared-decomp's failures are: the shared transform's own raises on
// calls aten takes (each message with the form of call that meets it) and
// the shape its GQA tiling gives a value dim of 1; never an int8 finding.
std::string shared_decomp_class(const Case& c, const CaseResult& r) {
  const std::string d = r.primary() ? r.primary()->detail : "";
  const size_t rank = c.batch.size() + 3;
  if (r.verdict == Verdict::unexpected_error) {
    if (d.find("SDPA head mismatch requires enable_gqa=True") != std::string::npos)
      return rank == 4 && c.kv_heads == 1 && c.q_heads > 1 ? "head-mismatch MQA rank 4"
             : rank == 3                                    ? "head-mismatch rank 3 (Lq != Lkv)"
                                                            : "head-mismatch other";
    if (d.find("ValueError: GQA mismatch") != std::string::npos && rank == 3) return "GQA mismatch rank 3";
    if (d.find("not enough values to unpack") != std::string::npos && rank == 3) return "unpack rank 3";
    if (d.find("math domain error") != std::string::npos && c.scale && *c.scale < 0) return "math domain error";
    if (d.find("The expanded size of the tensor") != std::string::npos && c.value_dim != c.head_dim)
      return "expand v (GQA, Ev != E)";
  }
  if (r.verdict == Verdict::shape_mismatch && c.value_dim == 1 && c.head_dim > 1) return "shape (GQA, Ev = 1)";
  return std::string(verdict_name(r.verdict)) + ": " + d.substr(0, 120);
}

TEST(CortexMSharedDecomp, ACampaignFindsOnlyTheTransformsOwnFailures) {
  auto target = fixture().registry.make("cortex-m", {{"guard", "shared-decomp"}});
  CampaignOptions o;
  o.seed = 1;
  o.cases = 1000;
  o.max_shrink_steps = 0;
  std::map<std::string, int> classes, passing;  // passing: decomposed and lowered int8 forms that pass
  o.on_case = [&](const Case& c, const CaseResult& r) {
    if (r.verdict != Verdict::pass) return void(++classes[shared_decomp_class(c, r)]);
    if (c.mask) ++passing["mask"];
    if (c.is_causal) ++passing["causal"];
    if (c.q_heads != c.kv_heads) ++passing[c.kv_heads == 1 ? "MQA" : "GQA"];
    if (c.dropout_p > 0) ++passing["dropout"];
  };
  TargetRun r = run_target_campaign(*target, *fixture().reference, fixture().generators, o);
  print_verdicts("cortex-m guard=shared-decomp", r);
  const std::set<std::string> known = {"head-mismatch MQA rank 4", "head-mismatch rank 3 (Lq != Lkv)",
                                       "GQA mismatch rank 3",      "unpack rank 3",
                                       "math domain error",        "expand v (GQA, Ev != E)",
                                       "shape (GQA, Ev = 1)"};
  for (const auto& [what, n] : classes) {
    std::printf("  %5d %s\n", n, what.c_str());
    EXPECT_TRUE(known.count(what)) << n << " x " << what;
  }
  EXPECT_GT(classes["head-mismatch MQA rank 4"], 0);
  // The case space draws the forms only shared-decomp decomposes, and their int8 lowering passes.
  for (const char* form : {"mask", "causal", "MQA", "GQA", "dropout"}) {
    std::printf("  pass with %s: %d\n", form, passing[form]);
    EXPECT_GT(passing[form], 10) << form;
  }
  EXPECT_GT(r.verdicts["pass"], 400) << run_summary_text({r});
}

// The graph the target's passes leave for case `c`.
Graph lowered(const Target& t, const Case& c) {
  Graph g = t.entry(c);
  for (const Pass* p : t.passes()) g = p->run(g, c.shape_env()).graph;
  return g;
}

// The same case under mul-check=upstream: CortexMAddMulCheck leaves the MUL
// fp32, so no quantized_mul and no abort. The softmax reads the MUL output's
// observer, all zeros, floored at f32 eps = 2^-23: softmax_params gives
// 2^-23·2^26 = 8 = 0.5·2^4, so (2^30, 4, -floor(31·2^26/2^4)).
TEST(CortexMKnownFindings, TinyScaleRunsUnderTheUpstreamMulCheck) {
  auto t = fixture().registry.make("cortex-m", {{"mul-check", "upstream"}});
  Case c;
  c.scale = 1e-8;
  c.data.distribution = Distribution::integers;
  c.data.seed = 5219641430841714;
  const Graph g = lowered(*t, c);
  EXPECT_EQ(g.count(kMulOp), 0);
  EXPECT_EQ(g.count("aten.mul.Scalar"), 1);
  ASSERT_EQ(g.count(kSoftmaxOp), 1);
  for (const Node& n : g.nodes) {
    if (n.op != kSoftmaxOp) continue;
    EXPECT_EQ(std::get<double>(*n.kwarg("input_scale")), std::ldexp(1.0, -23));
    EXPECT_EQ(std::get<int64_t>(n.args[4]), 1073741824);
    EXPECT_EQ(std::get<int64_t>(n.args[5]), 4);
    EXPECT_EQ(std::get<int64_t>(n.args[6]), -130023424);
  }
  CaseResult r = run_case(*t, *fixture().reference, c);
  EXPECT_EQ(r.verdict, Verdict::pass) << verdict_name(r.verdict) << ": " << (r.primary() ? r.primary()->detail : "");
}

// Independent min/max observers on proportional data can round a zero point
// differently at an exact tie (min / scale = -127.5 with integer data): the
// proportionality invariant names it.
TEST(CortexMKnownFindings, ZeroPointTie) {
  auto t = fixture().registry.make("cortex-m", {});
  Case c;
  c.q_len = c.kv_len = 3;
  c.scale = 1e4;
  c.data.distribution = Distribution::integers;
  int found = 0;
  for (uint64_t seed = 0; seed < 400 && !found; ++seed) {
    c.data.seed = seed;
    CaseResult r = run_case(*t, *fixture().reference, c);
    if (r.verdict == Verdict::broken_invariant) {
      ++found;
      EXPECT_NE(r.primary()->detail.find("zero points must be equal"), std::string::npos) << r.primary()->detail;
    }
  }
  EXPECT_EQ(found, 1);
}

// Derived qparams (S_in * scale, Z_in) are proportional by construction:
// the same 400 data draws show no tie.
TEST(CortexMKnownFindings, DerivedMulQparamsHaveNoZeroPointTie) {
  auto t = fixture().registry.make("cortex-m", {{"mul-qparams", "derived"}});
  Case c;
  c.q_len = c.kv_len = 3;
  c.scale = 1e4;
  c.data.distribution = Distribution::integers;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    c.data.seed = seed;
    CaseResult r = run_case(*t, *fixture().reference, c);
    EXPECT_NE(r.verdict, Verdict::broken_invariant) << seed << ": " << r.primary()->detail;
  }
}

// With upstream's HistogramObserver (float32), ZeroPointTie's draws (its
// tie is at seed 0) show no zero-point tie, and the tiny scale's constant
// still floors at eps and rounds to 0: the tie is MinMax's, the rounding
// both observers'.
TEST(CortexMKnownFindings, HistogramObserverHasNoTieButTheTinyScaleStillRoundsToZero) {
  auto t = fixture().registry.make("cortex-m", {{"observer", "histogram"}});
  Case c;
  c.q_len = c.kv_len = 3;
  c.scale = 1e4;
  c.data.distribution = Distribution::integers;
  c.data.seed = 0;
  ASSERT_EQ(run_case(*fixture().registry.make("cortex-m", {}), *fixture().reference, c).verdict,
            Verdict::broken_invariant);
  for (uint64_t seed = 0; seed < 50; ++seed) {
    c.data.seed = seed;
    CaseResult r = run_case(*t, *fixture().reference, c);
    EXPECT_NE(r.verdict, Verdict::broken_invariant) << seed << ": " << r.primary()->detail;
  }
  Case tiny;
  tiny.kv_len = 4;
  tiny.scale = 1e-8;
  tiny.data.seed = 5054598892043641;
  EXPECT_EQ(run_case(*t, *fixture().reference, tiny).verdict, Verdict::unsound_rewrite);
}

// A lowering that hands quantized_mul the scale as a [1, 1, 1, 1] constant
// on multi-head (or non-4-D) scores: the runtime's ET_CHECK_MSG aborts, a
// crash shrunk to a small case that passes with the materialized constant.
TEST(CortexMMutants, AnUnmaterializedScalarConstantAbortsTheRuntimeAndShrinks) {
  TargetRun r = fixture().campaign({{"mutant", "unmaterialized-scalar"}}, 500, 2, {}, /*tiny=*/false);
  const WrittenFinding* w = nullptr;
  for (const auto& f : r.findings)
    if (!w && f.verdict == "crash") w = &f;
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  EXPECT_NE(w->finding.detail.find("Input1 and Input2 must have the same sizes"), std::string::npos) << w->finding.detail;
  EXPECT_TRUE(small(w->shrunk)) << case_summary(w->shrunk);
  EXPECT_GT(w->shrink_steps, 0);
  CaseResult ok = run_case(*fixture().registry.make("cortex-m", {}), *fixture().reference, w->shrunk);
  EXPECT_EQ(ok.verdict, Verdict::pass) << verdict_name(ok.verdict);
}

// cpu=m55 reaches the Helium models: a scale of 0 makes every score code
// equal, so a row of 512 keys sums to 2^28 and the softmax's final shift is
// 32; the scalar build shifts a C int by it (undefined behaviour: the
// lowered graph cannot run, an invalid-rewrite), Helium's vector lanes give
// -128 (P = 0, 0.5 LSB below 1/512) and the case passes.
TEST(CortexMHelium, ARowOf512EqualScoresIsDefinedOnM55Only) {
  Case c;
  c.q_len = 1;
  c.kv_len = 512;
  c.head_dim = c.value_dim = 2;
  c.scale = 0.0;
  c.data.seed = 3;
  const CaseResult scalar = run_case(*fixture().registry.make("cortex-m", {}), *fixture().reference, c);
  ASSERT_EQ(scalar.verdict, Verdict::invalid_rewrite) << verdict_name(scalar.verdict);
  EXPECT_NE(scalar.primary()->detail.find("undefined behaviour in arm_softmax_s8: bits_over_unit (row 0)"),
            std::string::npos)
      << scalar.primary()->detail;
  const CaseResult m55 = run_case(*fixture().registry.make("cortex-m", {{"cpu", "m55"}}), *fixture().reference, c);
  EXPECT_EQ(m55.verdict, Verdict::pass) << verdict_name(m55.verdict) << ": " << (m55.primary() ? m55.primary()->detail : "");
}

struct Expectation {
  Options options;
  std::string verdict, name;
  std::string detail = "";  // a text the mutant's finding holds (another finding may share its verdict)
};

void PrintTo(const Expectation& e, std::ostream* os) { *os << e.name; }

class CaughtAndShrunk : public ::testing::TestWithParam<Expectation> {};

TEST_P(CaughtAndShrunk, TheHarnessCatchesItAndShrinksIt) {
  const Expectation& p = GetParam();
  TargetRun r = fixture().campaign(p.options, 2000, 6);
  const WrittenFinding* w = nullptr;
  for (const auto& f : r.findings)
    if (!w && f.verdict == p.verdict && f.finding.detail.find(p.detail) != std::string::npos) w = &f;
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  // A rounding tie survives only in some cases: single rounding's shrunk case need not be tiny.
  if (p.name != "single_rounding") {
    EXPECT_TRUE(small(w->shrunk)) << case_summary(w->shrunk);
  }
  EXPECT_GT(w->shrink_steps, 0);
  // The shrunk case passes (or is rejected) on the right configuration.
  auto right = fixture().registry.make("cortex-m", {{"guard", p.options.count("guard") ? p.options.at("guard") : "decompose"}});
  CaseResult ok = run_case(*right, *fixture().reference, w->shrunk);
  EXPECT_TRUE(ok.verdict == Verdict::pass || ok.verdict == Verdict::rejected) << verdict_name(ok.verdict);
  std::printf("%s: %s at case %lld, shrunk in %d steps to %s\n  %s\n", p.name.c_str(), p.verdict.c_str(),
              static_cast<long long>(w->iteration), w->shrink_steps, case_summary(w->shrunk).c_str(),
              w->finding.detail.substr(0, 300).c_str());
}

std::vector<Expectation> expectations() {
  std::vector<Expectation> out = {
      {{{"mutant", "non-proportional-qparams"}}, "broken-invariant", "non_proportional_qparams"},
      {{{"mutant", "single-rounding"}}, "inaccurate-kernel", "single_rounding"},
      {{{"mutant", "softmax-truncating-shift"}}, "inaccurate-kernel", "softmax_truncating_shift",
       "the integer reference arm_softmax_s8"},
      {{{"mutant", "quantize-truncates"}}, "inaccurate-kernel", "quantize_truncates", "quantize_per_tensor"}};
  // shared-decomp has no guard: its emitter's mutants instead.
  for (const char* mutant : {"shared-drop-mask", "shared-drop-causal", "shared-drop-dropout", "shared-gqa-tile"}) {
    std::string name = mutant;
    for (char& ch : name) ch = ch == '-' ? '_' : ch;
    out.push_back({{{"guard", "shared-decomp"}, {"mutant", mutant}}, "unsound-rewrite", name});
  }
  for (const char* policy : {"decompose", "decompose+fold"}) {
    std::string p = policy;
    for (char& ch : p) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    for (const auto& [rule, verdict] : std::vector<std::pair<std::string, std::string>>{
             {"no-mask", "unsound-rewrite"}, {"not-causal", "unsound-rewrite"}, {"no-dropout", "unsound-rewrite"},
             {"equal-heads", "invalid-rewrite"}}) {
      std::string r = rule;
      for (char& ch : r) ch = ch == '-' ? '_' : ch;
      out.push_back({{{"guard", policy}, {"weaken", rule}}, verdict, p + "_weaken_" + r});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Mutants, CaughtAndShrunk, ::testing::ValuesIn(expectations()),
                         [](const ::testing::TestParamInfo<Expectation>& i) { return i.param.name; });

}  // namespace
}  // namespace sdpa::cortex_m
