// Self-tests on the llm target: the upstream pass's derived defects are
// found, shrunk and written; the contract policy is clean; and each contract
// rule, weakened alone, has a consequence the harness catches and shrinks.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>

#include <filesystem>

#include "backends/all_targets.h"
#include "backends/llm/custom_sdpa_kernel.h"
#include "backends/llm/llm_upstream_repro.h"
#include "backends/target_fixture.h"
#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "harness/campaign/gate.h"
#include "harness/case/tensor_data.h"
#include "harness/campaign/replay.h"
#include "oracles/dual_oracle.h"
#include "reports/run_summary.h"

namespace sdpa::llm {
namespace {

struct Fixture : TargetFixture {

  TargetRun campaign(const Options& options, int64_t cases, const std::string& corpus = "") const {
    auto target = registry.make("llm", options);
    CampaignOptions o;
    o.seed = 20261130;
    o.cases = cases;
    o.corpus_dir = corpus;
    o.record_warnings = true;
    return run_target_campaign(*target, *reference, generators, o);
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const WrittenFinding* find(const TargetRun& r, const std::string& verdict,
                           const std::function<bool(const Finding&)>& what) {
  for (const auto& w : r.findings)
    if (w.verdict == verdict && what(w.finding)) return &w;
  return nullptr;
}

std::function<bool(const Finding&)> in_class(const std::string& rule) {
  return [rule](const Finding& f) { return contains(f.failure_class, rule); };
}
std::function<bool(const Finding&)> says(const std::string& text) {
  return [text](const Finding& f) { return contains(f.detail, text); };
}

bool small(const Case& c) {
  ConcreteSizes s = concrete_sizes(c, c.runs()[0]);
  return s.batch_numel() <= 2 && s.Hq <= 4 && s.Lq <= 4 && s.Lkv <= 4 && s.E <= 2 && s.Ev <= 2;
}

struct Defect {
  std::string what, verdict;
  std::function<bool(const Finding&)> matches;
};

TEST(LlmUpstream, FindsShrinksAndRecordsEachDerivedDefectWithin2000Cases) {
  namespace fs = std::filesystem;
  fs::path corpus = fs::temp_directory_path() / ("sdpacheck_llm_upstream_" + std::to_string(::getpid()));
  fs::remove_all(corpus);
  TargetRun r = fixture().campaign({{"guard", "upstream"}}, 2000, corpus.string());
  const std::vector<Defect> defects = {
      {"(a) unmasked Lkv > Lq: keys past start_pos + Lq are cut", "unsound-rewrite", in_class("unmasked-lengths")},
      {"(b) Lkv < Lq: custom_sdpa aborts", "crash", says("num_keys_for_causal_attention must be <= kvSize")},
      {"(e) dropout ignored", "unsound-rewrite", in_class("dropout")},
      {"(f) an f16 mask passes export and fails at run time", "invalid-rewrite", says("Attention mask must be a Float tensor")},
      {"(g) a rank-1 mask fails the Meta assert during the pass", "unexpected-error", says("Expected attn_mask to be 2 dimensional but got 1 dimensions.")},
      {"a bf16 mask fails the Meta assert during the pass", "unexpected-error", says("Expected attn_mask to be float but got torch.bfloat16")},
      {"D != Dv fails the Meta assert during the pass", "unexpected-error", says("Key cache and value cache must have same size")},
      {"an f64 call fails the Meta assert during the pass", "unexpected-error", says("Expected query to be float32, bfloat16, or float16 but got torch.float64")},
      {"a broadcast mask row [1, Lkv] is not [Lq, Lkv]", "crash", says("attn_mask shape mismatch")},
      {"causal with scale 0: -inf * 0", "nan-mismatch", in_class("causal-scale")},
  };
  for (const auto& d : defects) {
    const WrittenFinding* w = find(r, d.verdict, d.matches);
    ASSERT_NE(w, nullptr) << d.what << "\n" << run_summary_text({r});
    EXPECT_LT(w->iteration, 2000) << d.what;
    EXPECT_TRUE(small(w->shrunk)) << d.what << ": " << case_summary(w->shrunk);
    ASSERT_FALSE(w->file.empty());
    CorpusEntry e = read_corpus_file(w->file);
    EXPECT_EQ(e.expect, d.verdict);
    EXPECT_EQ(replay_entry(e, fixture().registry, *fixture().reference).status, ReplayStatus::as_expected) << w->file;
  }
}

TEST(LlmContract, NoUnsoundInvalidCrashOrUnexpectedError) {
  TargetRun r = fixture().campaign({{"guard", "contract"}}, 2000);
  for (const char* v : {"unsound-rewrite", "invalid-rewrite", "crash", "unexpected-error", "nan-mismatch",
                        "inaccurate-kernel", "broken-invariant", "oracle-disagree"})
    EXPECT_EQ(r.verdicts[v], 0) << v << "\n" << run_summary_text({r});
  EXPECT_GT(r.verdicts["pass"], 100);
  EXPECT_GT(r.verdicts["known-divergence"], 0);  // fully masked rows, counted apart
}

Case symbolic_lengths(std::vector<Assignment> runtime) {
  Case c;
  c.batch = {SymExpr(1)};
  c.q_len = SymExpr::symbol("s0");
  c.kv_len = SymExpr::symbol("s1");
  c.symbols = {{"s0", {3, 1, 8}}, {"s1", {3, 1, 8}}};
  c.runtime = std::move(runtime);
  c.head_dim = c.value_dim = 4;
  c.data.seed = 5;
  return c;
}

// The completeness check: the contract keeps Lq == Lkv unproven. When
// every runtime size has Lq == Lkv the forced rewrite is sound there, but
// the symbols allow Lq 1, Lkv 3, where custom_sdpa cuts the keys past
// start_pos + Lq: the proof finds that size and the rejection is right (a
// missed-rewrite before the proof); a runtime size with Lq != Lkv rejects
// it at once.
TEST(LlmContract, CompletenessTellsAMissedRewriteFromARightRejection) {
  auto target = fixture().registry.make("llm", {{"guard", "contract"}});
  Case equal = symbolic_lengths({{{"s0", 3}, {"s1", 3}}, {{"s0", 5}, {"s1", 5}}});
  CaseResult r = run_case(*target, *fixture().reference, equal);
  EXPECT_EQ(r.verdict, Verdict::rejected);
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_EQ(r.decisions[0].deciding_rule, "unmasked-lengths");
  EXPECT_EQ(r.decisions[0].refuted_at, "s0 = 1, s1 = 3 (the min of s0; Lq 1, Lkv 3)");
  Case unequal = symbolic_lengths({{{"s0", 3}, {"s1", 3}}, {{"s0", 2}, {"s1", 5}}});
  CaseResult u = run_case(*target, *fixture().reference, unequal);
  EXPECT_EQ(u.verdict, Verdict::rejected);
  EXPECT_TRUE(u.decisions.at(0).refuted_at.empty()) << "refuted at a runtime size, before the proof";
}

// Large data saturates the softmax onto one key per row: where that key
// is one custom_sdpa keeps (unmasked, Lq 4 of Lkv 6: keys 4 and 5 are cut),
// the cut keys weigh nothing and the forced rewrite agrees with aten on
// that draw. The second draw's data makes scores of order 1.
TEST(LlmContract, DataThatSaturatesTheSoftmaxCannotHideTheCutKeys) {
  auto target = fixture().registry.make("llm", {{"guard", "contract"}});
  Case c = symbolic_lengths({});
  c.symbols.clear();
  c.q_len = 4;
  c.kv_len = 6;
  c.q_heads = 2;
  c.enable_gqa = true;
  c.head_dim = c.value_dim = 1;
  c.data.magnitude = 100;
  c.data.seed = 1;  // on its first draw every row's largest score is at a key below 4
  CaseResult r = run_case(*target, *fixture().reference, c);
  EXPECT_EQ(r.verdict, Verdict::rejected);
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_EQ(r.decisions[0].deciding_rule, "unmasked-lengths");
  EXPECT_NE(r.decisions[0].refuted_at.find("Lq 4, Lkv 6), on the second data draw"), std::string::npos)
      << r.decisions[0].refuted_at;
}

// A truly missed rewrite: causal with scale 0 keeps the node (causal-scale:
// custom_sdpa writes the causal -inf before the scale, -inf * 0 = NaN), but
// with Lq = Lkv = 1 no key is causally dropped, so the rewrite is sound on
// any data: it stays missed-rewrite through the proof's second draw.
TEST(LlmContract, ARewriteTheContractMissesOnAnyDataStaysMissed) {
  auto target = fixture().registry.make("llm", {{"guard", "contract"}});
  Case c = symbolic_lengths({});
  c.q_len = c.kv_len = 1;
  c.symbols.clear();
  c.is_causal = true;
  c.scale = 0.0;
  CaseResult r = run_case(*target, *fixture().reference, c);
  ASSERT_EQ(r.verdict, Verdict::missed_rewrite) << (r.primary() ? r.primary()->detail : "");
  EXPECT_EQ(r.decisions.at(0).deciding_rule, "causal-scale");
  EXPECT_TRUE(r.decisions[0].sound_alone);
  EXPECT_NE(r.primary()->detail.find("second data draw"), std::string::npos) << r.primary()->detail;
}

// A call with E != Ev: the Meta kernel's key_cache.size() == value_cache.size() fails
// the upstream pass at export (semantics §2.1 item 7), before any graph a
// shape invariant could see.
TEST(LlmUpstream, EDifferentFromEvFailsThePassAtExport) {
  auto target = fixture().registry.make("llm", {{"guard", "upstream"}});
  Case c = symbolic_lengths({{{"s0", 3}, {"s1", 3}}});
  c.kv_len = c.q_len;
  c.symbols.erase("s1");
  c.runtime = {{{"s0", 3}}};
  c.value_dim = 2;
  CaseResult r = run_case(*target, *fixture().reference, c);
  ASSERT_EQ(r.verdict, Verdict::unexpected_error);
  EXPECT_NE(r.primary()->detail.find("pass replace-sdpa-with-custom-sdpa raised: AssertionError in custom_sdpa meta "
                                     "(_validate_params): Key cache and value cache must have same size but got "
                                     "torch.Size([1, s0, 1, 4]) and torch.Size([1, s0, 1, 2])"),
            std::string::npos)
      << r.primary()->detail;
}

// ExecuTorch's tree of 2026-07-07, before custom_sdpa took half precision
// (411a01e1b9): export of an f16 or bf16 call fails in the pass on the Meta
// kernel's float32 assert, a finding shrunk and replayed with its option.
TEST(LlmExecuTorchTrees, BeforeJuly2026HalfPrecisionExportFailsInThePass) {
  namespace fs = std::filesystem;
  fs::path corpus = fs::temp_directory_path() / ("sdpacheck_llm_tree_" + std::to_string(::getpid()));
  fs::remove_all(corpus);
  TargetRun r = fixture().campaign({{"guard", "upstream"}, {"executorch", "2026-07-07"}}, 600, corpus.string());
  for (const char* half : {"torch.bfloat16", "torch.float16"}) {
    const WrittenFinding* w =
        find(r, "unexpected-error", says(std::string("Expected query to be float32 but got ") + half));
    ASSERT_NE(w, nullptr) << half << "\n" << run_summary_text({r});
    EXPECT_TRUE(small(w->shrunk)) << case_summary(w->shrunk);
    CorpusEntry e = read_corpus_file(w->file);
    EXPECT_EQ(e.options.at("executorch"), "2026-07-07");
    EXPECT_EQ(replay_entry(e, fixture().registry, *fixture().reference).status, ReplayStatus::as_expected);
  }
  TargetRun now = fixture().campaign({{"guard", "upstream"}}, 600);
  EXPECT_EQ(find(now, "unexpected-error", says("Expected query to be float32 but got")), nullptr);
  fs::remove_all(corpus);
}

// The module swap on the tree before f3e8972de6, under its contract: every
// non-finite row the earlier kernel gives where aten is finite is one its
// declared divergences explain (no nan-mismatch), with and without the mask.
TEST(LlmExecuTorchTrees, BeforeApril2025TheSwapsContractHasNoUnexplainedFailure) {
  for (const char* mask : {"false", "true"}) {
    TargetRun r = fixture().campaign(
        {{"entry", "sdpa-custom"}, {"use_attention_mask", mask}, {"executorch", "2025-04-24"}}, 1500);
    for (const char* v : {"unsound-rewrite", "invalid-rewrite", "crash", "unexpected-error", "nan-mismatch",
                          "inaccurate-kernel", "broken-invariant", "oracle-disagree"})
      EXPECT_EQ(r.verdicts[v], 0) << mask << " " << v << "\n" << run_summary_text({r});
    EXPECT_GT(r.verdicts["known-divergence"], 0) << mask;
    EXPECT_GT(r.verdicts["pass"], 20) << mask;
  }
}

// A repro script runs the ExecuTorch installed: one found on an earlier
// tree says which tree the model was.
TEST(LlmExecuTorchTrees, AReproOfAnEarlierTreeNamesTheTree) {
  const UpstreamRepro old = llm_upstream_repro({{"guard", "upstream"}, {"executorch", "2026-07-07"}});
  ASSERT_EQ(old.deviations.size(), 1u);
  EXPECT_NE(old.deviations[0].find("option executorch=2026-07-07: the model is ExecuTorch's tree of that date"),
            std::string::npos)
      << old.deviations[0];
  EXPECT_TRUE(llm_upstream_repro({{"guard", "upstream"}, {"executorch", "main"}}).deviations.empty());
}

// The gate across an ExecuTorch upgrade, 2026-07-07 -> main, on the
// contract: the half-precision calls the earlier tree's dtype rule kept are
// rewritten and sound, and no decision on an f32 call changes.
TEST(LlmExecuTorchTrees, TheContractGainsHalfPrecisionCallsAcrossTheUpgradeAndNoneIsUnsound) {
  auto decisions = [](const Options& o) {
    return record_decisions(*fixture().registry.make("llm", o), *fixture().reference, fixture().generators, 3, 400,
                            100);
  };
  GateComparison g = compare_decisions(decisions({{"guard", "contract"}, {"executorch", "2026-07-07"}}),
                                       decisions({{"guard", "contract"}}));
  auto changed = [&](GateClass c) { return g.changes.count(c) ? g.changes.at(c) : std::vector<GateChange>{}; };
  EXPECT_TRUE(changed(GateClass::newly_unsound).empty());
  EXPECT_TRUE(changed(GateClass::newly_missed).empty());
  const auto gained = changed(GateClass::newly_rewritten_sound);
  EXPECT_GT(gained.size(), 10u);
  for (GateClass c : gate_classes())
    for (const GateChange& ch : changed(c)) {
      EXPECT_TRUE(ch.base.c.dtype == DType::f16 || ch.base.c.dtype == DType::bf16) << case_summary(ch.base.c);
      EXPECT_EQ(ch.base.rule, "dtype") << case_summary(ch.base.c);
    }
}

// call_form=keyword: an SDPA node that passes attn_mask, dropout_p and
// is_causal by keyword. The export pass reads them by position only (§2.1
// item 1), so it drops a mask or is_causal and the rewrite is unsound: found,
// named by its defect class, shrunk and replayed. The contract binds them:
// its campaign is the positional one's, verdict for verdict.
TEST(LlmKeywordCallForm, TheExportPassDropsKeywordArgumentsAndTheContractBindsThem) {
  namespace fs = std::filesystem;
  fs::path corpus = fs::temp_directory_path() / ("sdpacheck_llm_keyword_" + std::to_string(::getpid()));
  fs::remove_all(corpus);
  TargetRun r = fixture().campaign({{"guard", "upstream"}, {"call_form", "keyword"}}, 600, corpus.string());
  const WrittenFinding* w = find(r, "unsound-rewrite", in_class("keyword-args"));
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  EXPECT_TRUE(w->shrunk.mask.has_value()) << case_summary(w->shrunk);  // the dropped mask
  EXPECT_TRUE(small(w->shrunk)) << case_summary(w->shrunk);
  CorpusEntry e = read_corpus_file(w->file);
  EXPECT_EQ(e.options.at("call_form"), "keyword");
  EXPECT_EQ(replay_entry(e, fixture().registry, *fixture().reference).status, ReplayStatus::as_expected);
  fs::remove_all(corpus);
  // A dropped is_causal: the same class, so the campaign writes one case of
  // the two; run here on a causal call of its own.
  Case causal = symbolic_lengths({{{"s0", 3}, {"s1", 3}}});
  causal.kv_len = causal.q_len;
  causal.symbols.erase("s1");
  causal.runtime = {{{"s0", 3}}};
  causal.is_causal = true;
  auto upstream = fixture().registry.make("llm", {{"guard", "upstream"}, {"call_form", "keyword"}});
  CaseResult dropped = run_case(*upstream, *fixture().reference, causal);
  ASSERT_EQ(dropped.verdict, Verdict::unsound_rewrite);
  EXPECT_TRUE(contains(dropped.primary()->failure_class, "keyword-args")) << dropped.primary()->failure_class;
  auto by_position = fixture().registry.make("llm", {{"guard", "upstream"}});
  EXPECT_EQ(run_case(*by_position, *fixture().reference, causal).verdict, Verdict::pass);
  TargetRun keyword = fixture().campaign({{"guard", "contract"}, {"call_form", "keyword"}}, 1000);
  TargetRun positional = fixture().campaign({{"guard", "contract"}}, 1000);
  EXPECT_EQ(keyword.verdicts, positional.verdicts);
  EXPECT_EQ(keyword.verdicts["unsound-rewrite"], 0);
}

// A NaN in k at a key causal attention drops: aten's row is NaN, and
// custom_sdpa, which writes -inf over that score, gives a finite row, the
// declared divergence. When the upstream pass dropped a keyword is_causal,
// custom_sdpa ran non-causal: the divergence no longer describes the call,
// and the explanation must not claim it.
// A graph that ran custom_sdpa: the kernel the explanations describe.
Graph custom_sdpa_ran() {
  Graph g;
  Node n;
  n.name = "custom_sdpa";
  n.op = kCustomSdpaOp;
  g.nodes.push_back(n);
  return g;
}

TEST(LlmKeywordCallForm, AnExplanationDescribesTheCallThePassEmitted) {
  Case c = symbolic_lengths({{{"s0", 2}, {"s1", 2}}});
  c.q_len = c.kv_len = 2;
  c.symbols.clear();
  c.runtime.clear();
  c.head_dim = c.value_dim = 1;
  c.is_causal = true;
  CaseTensors t = make_case_tensors(c, {});
  t.k.data[1] = std::nan("");  // row 0's dropped key
  const Golden g = fixture().reference->golden(c, t, {});
  ASSERT_TRUE(std::isnan(g.out.data[0]));
  auto explains = [&](const Options& o) {
    return fixture().registry.make("llm", o)->explains_nan(c, t, g, {0}, "custom_ops", custom_sdpa_ran()).has_value();
  };
  EXPECT_TRUE(explains({{"guard", "upstream"}}));
  // A graph that kept aten SDPA ran no custom_sdpa: nothing it does explains the row.
  EXPECT_FALSE(fixture().registry.make("llm", {{"guard", "upstream"}})->explains_nan(c, t, g, {0}, "custom_ops", Graph{}));
  EXPECT_FALSE(fixture().registry.make("llm", {{"entry", "sdpa-custom"}})->explains_nan(c, t, g, {0}, "custom_ops", Graph{}));
  EXPECT_TRUE(explains({{"guard", "contract"}, {"call_form", "keyword"}}));
  EXPECT_FALSE(explains({{"guard", "upstream"}, {"call_form", "keyword"}}));
  // aten's fully masked row is the kernel's only where the kernel got the mask.
  Case masked = c;
  masked.is_causal = false;
  masked.mask = MaskSpec{DType::f32, {SymExpr(2), SymExpr(2)}, MaskPattern::keep_all};
  CaseTensors mt = make_case_tensors(masked, {});
  mt.mask->data = {-INFINITY, -INFINITY, 0.0, 0.0};  // row 0 fully masked
  Golden mg = fixture().reference->golden(masked, mt, {});
  ASSERT_TRUE(mg.fully_masked.at(0));
  auto explains_masked = [&](const Options& o) {
    return fixture().registry.make("llm", o)->explains_nan(masked, mt, mg, {0}, "custom_ops", custom_sdpa_ran()).has_value();
  };
  EXPECT_TRUE(explains_masked({{"guard", "contract"}, {"call_form", "keyword"}}));
  EXPECT_FALSE(explains_masked({{"guard", "upstream"}, {"call_form", "keyword"}}));
}

// The fact keyword-args names a failure only where the pass dropped
// something: under upstream, without assume_causal_mask, for a mask or
// is_causal (a dropped dropout_p changes nothing: custom_sdpa ignores it).
TEST(LlmKeywordCallForm, TheKeywordFactIsNamedOnlyWhereThePassDroppedAnArgument) {
  Case c = symbolic_lengths({{{"s0", 2}, {"s1", 2}}});
  c.q_len = c.kv_len = 2;
  c.symbols.clear();
  c.runtime.clear();
  c.is_causal = true;
  auto names_it = [&](const Options& o) {
    for (const auto& r : fixture().registry.make("llm", o)->failure_facts(c))
      if (r.rule == "keyword-args") return true;
    return false;
  };
  EXPECT_TRUE(names_it({{"guard", "upstream"}, {"call_form", "keyword"}}));
  EXPECT_FALSE(names_it({{"guard", "contract"}, {"call_form", "keyword"}}));
  EXPECT_FALSE(names_it({{"guard", "upstream"}, {"call_form", "keyword"}, {"assume_causal_mask", "true"}}));
  EXPECT_FALSE(names_it({{"guard", "upstream"}}));
  c.is_causal = false;
  c.dropout_p = 0.5;
  EXPECT_FALSE(names_it({{"guard", "upstream"}, {"call_form", "keyword"}}));
}

TEST(LlmKeywordCallForm, AReproSaysExportWritesThePositionalForm) {
  const UpstreamRepro u = llm_upstream_repro({{"guard", "upstream"}, {"call_form", "keyword"}});
  ASSERT_EQ(u.deviations.size(), 1u);
  EXPECT_NE(u.deviations[0].find("which torch.export never writes"), std::string::npos) << u.deviations[0];
}

struct Weakening {
  std::string rule;
  std::function<bool(const Finding&)> caught;
};

void PrintTo(const Weakening& w, std::ostream* os) { *os << w.rule; }

class WeakenedContract : public ::testing::TestWithParam<Weakening> {};

TEST_P(WeakenedContract, TheHarnessCatchesTheConsequenceAndShrinksIt) {
  TargetRun r = fixture().campaign({{"guard", "contract"}, {"weaken", GetParam().rule}}, 2000);
  const WrittenFinding* w = nullptr;
  for (const auto& f : r.findings)
    if (!w && is_failure(*parse_verdict(f.verdict)) && GetParam().caught(f.finding)) w = &f;
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  EXPECT_TRUE(small(w->shrunk)) << case_summary(w->shrunk);
}

INSTANTIATE_TEST_SUITE_P(
    Rules, WeakenedContract,
    ::testing::Values(
        Weakening{"rank", in_class("rank")}, Weakening{"dtype", in_class("dtype")},
        Weakening{"head-dims", in_class("head-dims")}, Weakening{"dropout", in_class("dropout")},
        Weakening{"query-length", in_class("query-length")},
        Weakening{"causal-lengths", in_class("causal-lengths")},
        Weakening{"causal-scale", in_class("causal-scale")},
        Weakening{"unmasked-lengths", in_class("unmasked-lengths")},
        Weakening{"mask-shape", in_class("mask-shape")},
        Weakening{"mask-dtype", [](const Finding& f) { return contains(f.detail, "Float tensor") || contains(f.detail, "float32 or float16"); }},
        Weakening{"static-facts", [](const Finding& f) { return !f.violated_assumptions.empty(); }}),
    [](const ::testing::TestParamInfo<Weakening>& i) {
      std::string n = i.param.rule;
      for (char& ch : n) ch = ch == '-' ? '_' : ch;
      return n;
    });

// Heads: aten itself rejects every call this rule would keep (Hq != Hkv
// without enable_gqa and Hkv != 1), so no valid case can break it.
TEST(WeakenedContract, HeadsIsImpliedByAtenValidity) {
  TargetRun r = fixture().campaign({{"guard", "contract"}, {"weaken", "heads"}}, 1000);
  for (const auto& f : r.findings) EXPECT_FALSE(contains(f.finding.failure_class, "heads")) << f.summary;
}

// assume_causal_mask before the guard: weakened, the guard reads the mask
// the option drops and misses the causal length rule.
TEST(WeakenedContract, AssumeCausalFirst) {
  Options strict{{"guard", "contract"}, {"assume_causal_mask", "true"}};
  Options weak = strict;
  weak["weaken"] = "assume-causal-first";
  TargetRun a = fixture().campaign(strict, 2000), b = fixture().campaign(weak, 2000);
  EXPECT_EQ(a.verdicts["crash"], 0) << run_summary_text({a});
  EXPECT_GT(b.verdicts["crash"] + b.verdicts["missed-rewrite"], a.verdicts["missed-rewrite"]) << run_summary_text({b});
  const WrittenFinding* w = find(b, "crash", says("num_keys_for_causal_attention"));
  ASSERT_NE(w, nullptr) << run_summary_text({b});
  EXPECT_TRUE(small(w->shrunk)) << case_summary(w->shrunk);
}

// custom_sdpa summing P @ V in bf16 (upstream: f32): a sound rewrite on an
// inaccurate kernel. The bound, derived from how custom_sdpa computes (f32
// scores, P rounded to the activation dtype, f32 accumulation), must see it.
TEST(KernelMutant, PvBf16AccumulationIsAnInaccurateKernelFoundAndShrunk) {
  const Options mutant{{"guard", "contract"}, {"kernel_mutant", "pv-bf16-accumulation"}};
  TargetRun r = fixture().campaign(mutant, 2000);
  const WrittenFinding* w = find(r, "inaccurate-kernel", [](const Finding& f) {
    return f.kernel_set == "custom_ops" && contains(f.first_node, "custom_sdpa");
  });
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  EXPECT_GT(w->shrink_steps, 0);
  EXPECT_GT(w->finding.error, w->finding.bound);
  // The shrunk case fails on the mutant kernel alone: upstream numerics pass it.
  auto wrong = fixture().registry.make("llm", mutant);
  auto right = fixture().registry.make("llm", {{"guard", "contract"}});
  EXPECT_EQ(run_case(*wrong, *fixture().reference, w->shrunk).verdict, Verdict::inaccurate_kernel);
  EXPECT_EQ(run_case(*right, *fixture().reference, w->shrunk).verdict, Verdict::pass)
      << case_summary(w->shrunk);
  std::printf("pv-bf16-accumulation: found at case %lld, shrunk in %d steps to %s\n",
              static_cast<long long>(w->iteration), w->shrink_steps, case_summary(w->shrunk).c_str());
}

// In bf16 calls, where P is already rounded to bf16 upstream, the bound
// still sees the bf16 sum: the power the floor at max|V| took away.
TEST(KernelMutant, PvBf16AccumulationIsFoundInBf16Calls) {
  auto target = fixture().registry.make("llm", {{"guard", "contract"}, {"kernel_mutant", "pv-bf16-accumulation"}});
  CaseGeneratorFactory bf16_only = [](CaseSpace s) {
    s.dtypes = {DType::bf16};
    return gen_case(GenPolicy::defaults(), s);
  };
  CampaignOptions o;
  o.seed = 20261130;
  o.cases = 2000;
  o.stop_after = 1;
  TargetRun r = run_target_campaign(*target, *fixture().reference, bf16_only, o);
  const WrittenFinding* w = find(r, "inaccurate-kernel", [](const Finding& f) { return true; });
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  EXPECT_EQ(w->shrunk.dtype, DType::bf16);
  EXPECT_GT(w->shrink_steps, 0);
  std::printf("bf16 calls: found at case %lld, shrunk to %s\n", static_cast<long long>(w->iteration),
              case_summary(w->shrunk).c_str());
}

}  // namespace
}  // namespace sdpa::llm
