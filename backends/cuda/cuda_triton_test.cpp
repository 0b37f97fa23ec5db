// The cuda target with Triton kernel mode on. ReplaceEdgeOpWithTritonOpPass
// has no guard, so the Triton kernels' own refusals (a power-of-2 head dim
// below 16 that does not compile among them) are invalid-rewrite findings
// with their messages; scale=0.0, which triton::sdpa reads as the default
// (llm-and-cuda.md §5 item 6), and the power-of-2 program's zero-padded
// keys are the two unsound classes; the
// split-K kernel's fixed maximum (p = exp(s - 5), no running max) is
// reported on large scores, where the standard kernel and the oracles agree.
#include <gtest/gtest.h>

#include "backends/all_targets.h"
#include "backends/cuda/triton/triton_splitk_kernel.h"
#include "backends/target_fixture.h"
#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "oracles/dual_oracle.h"
#include "reports/run_summary.h"

namespace sdpa::cuda {
namespace {

struct Fixture : TargetFixture {
  CaseResult check(const Options& o, const Case& c) const {
    return run_case(*registry.make("cuda", o), *reference, c);
  }
  TargetRun campaign(const Options& o, const GenPolicy& p, uint64_t seed, int64_t cases) const {
    CampaignOptions co;
    co.seed = seed;
    co.cases = cases;
    return run_target_campaign(*registry.make("cuda", o), *reference,
                               [p](const CaseSpace& s) { return gen_case(p, s); }, co);
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

// A decode call: bf16, Lq 1, Lkv 256, D 64, routed to split-K.
Case decode(double magnitude) {
  Case c;
  c.dtype = DType::bf16;
  c.batch = {SymExpr(1)};
  c.q_len = 1;
  c.kv_len = 256;
  c.head_dim = c.value_dim = 64;
  c.data.seed = 5;
  c.data.distribution = Distribution::large;
  c.data.magnitude = magnitude;
  return c;
}

TEST(CudaTriton, TheRoutedPipelineFailsOnlyWhereTheTritonKernelsDo) {
  TargetRun r = fixture().campaign({{"triton", "on"}}, GenPolicy::defaults(), 20261130, 600);
  for (const char* v : {"rounded-constant", "crash", "unexpected-error", "entry-disagree", "oracle-disagree",
                        "broken-invariant", "inaccurate-kernel"})
    EXPECT_EQ(r.verdicts[v], 0) << v << "\n" << run_summary_text({r});
  EXPECT_GT(r.verdicts["pass"], 60) << run_summary_text({r});
  // Calls the routed kernels compute: 99 of 600 when the head-dim cap kept
  // most powers of two below 16 (which do not compile), 140 since the
  // space asks for head dims of at least 16 at every size.
  EXPECT_GT(r.verdicts["pass"] + r.verdicts["unsound-rewrite"], 120) << run_summary_text({r});
  EXPECT_GT(r.verdicts["unsound-rewrite"], 0);
  // The two unsound classes: scale 0.0, which triton.sdpa reads as
  // 1/sqrt(D), and an unmasked, non-causal power-of-2 call whose last KV
  // tile lets its zero-padded keys into the softmax (Lkv not a multiple of
  // BLOCK_N = 64). The routing sees D as the entry holds it: a flash call's
  // head dim padded to a multiple of 8 (an unmasked bf16 call is flash's),
  // and a power-of-2 D below 16 does not compile.
  auto pow2 = [](int64_t D) { return D > 0 && (D & (D - 1)) == 0; };
  auto compiles_as_pow2 = [&](int64_t D) { return pow2(D) && D >= 16; };
  bool padding_found = false, compile_found = false;
  for (const auto& w : r.findings) {
    const ConcreteSizes s = concrete_sizes(w.shrunk, w.shrunk.runs().at(0));
    if (w.verdict == "unsound-rewrite") {
      const bool padding = !w.shrunk.mask && !w.shrunk.is_causal &&
                           (compiles_as_pow2(s.E) || compiles_as_pow2((s.E + 7) / 8 * 8)) && s.Lkv % 64 != 0;
      padding_found = padding_found || padding;
      EXPECT_TRUE(w.shrunk.scale == 0.0 || padding) << case_summary(w.shrunk);
    }
    if (w.verdict == "invalid-rewrite") {
      EXPECT_NE(w.finding.detail.find("triton."), std::string::npos) << w.finding.detail;
      // A power-of-2 D below 16, or the 8 a flash call's padding makes (no mask).
      if (w.finding.detail.find("CompilationError") != std::string::npos) {
        compile_found = true;
        EXPECT_TRUE((pow2(s.E) && s.E < 16) || (!w.shrunk.mask && s.E <= 8)) << case_summary(w.shrunk);
      }
    }
  }
  EXPECT_TRUE(padding_found) << run_summary_text({r});
  EXPECT_TRUE(compile_found) << run_summary_text({r});
}

TEST(CudaTriton, SplitKFixedMaxIsFoundOnLargeScores) {
  // Moderate scores: split-K within its bound.
  CaseResult ok = fixture().check({{"triton", "on"}}, decode(0.05));
  EXPECT_EQ(ok.verdict, Verdict::pass) << (ok.primary() ? ok.primary()->detail : "");
  // Scores far above phi + 88.7: exp overflows in f32, the row is NaN.
  CaseResult bad = fixture().check({{"triton", "on"}}, decode(2.0));
  ASSERT_TRUE(bad.verdict == Verdict::nan_mismatch || bad.verdict == Verdict::inaccurate_kernel)
      << verdict_name(bad.verdict);
  EXPECT_EQ(bad.primary()->kernel_set, "triton");
  EXPECT_NE(bad.primary()->first_node.find("sdpa_decode_splitk"), std::string::npos) << bad.primary()->first_node;
  // The same call with Lkv 255 takes the standard kernel, which has a running max.
  Case standard = decode(2.0);
  standard.kv_len = 255;
  EXPECT_EQ(fixture().check({{"triton", "on"}}, standard).verdict, Verdict::pass);
}

// splitk=running-max: the later sdpa.py keeps a running maximum per split
// and rescales in the reduce, so the scores that overflow the fixed phi
// give the softmax; an ExecuTorch upgrade across it loses the finding.
TEST(CudaTriton, TheRunningMaxTreeTakesTheScoresTheFixedPhiOverflowsOn) {
  const Options fixed{{"triton", "on"}}, running{{"triton", "on"}, {"splitk", "running-max"}};
  CaseResult before = fixture().check(fixed, decode(2.0));
  ASSERT_TRUE(before.verdict == Verdict::nan_mismatch || before.verdict == Verdict::inaccurate_kernel)
      << verdict_name(before.verdict);
  CaseResult after = fixture().check(running, decode(2.0));
  EXPECT_EQ(after.verdict, Verdict::pass) << (after.primary() ? after.primary()->detail : "");
  EXPECT_EQ(fixture().check(running, decode(0.05)).verdict, Verdict::pass);
  // Lkv 600: three splits, whose maxima the reduce rescales to the global one.
  Case three = decode(2.0);
  three.kv_len = 600;
  ASSERT_EQ(cuda_triton::splitk_num_splits(600), 3);
  CaseResult split = fixture().check(running, three);
  EXPECT_EQ(split.verdict, Verdict::pass) << (split.primary() ? split.primary()->detail : "");
  EXPECT_NE(fixture().check(fixed, three).verdict, Verdict::pass);
}

// The dispatcher pads a flash call's head dims to a multiple of 8 (§3.2),
// so routing sees the padded D: a D = 14 decode call is a D = 16 one and
// takes split-K, with the unpadded call's scale, and its fixed maximum
// overflows like D = 16's. A D = 6 call becomes D = 8, a power of two
// below 16, whose split-K program does not compile (tl.dot's K).
TEST(CudaTriton, APaddedFlashDecodeCallRoutesToSplitK) {
  Case c = decode(2.0);
  c.head_dim = c.value_dim = 14;
  auto target = fixture().registry.make("cuda", {{"triton", "on"}});
  const Graph entry = target->entry(c);
  EXPECT_EQ(entry.count("aten.constant_pad_nd.default"), 3);
  Case six = c;
  six.head_dim = six.value_dim = 6;
  CaseResult eight = fixture().check({{"triton", "on"}}, six);
  ASSERT_EQ(eight.verdict, Verdict::invalid_rewrite) << verdict_name(eight.verdict);
  EXPECT_NE(eight.primary()->detail.find("CompilationError at tl.dot(q, tl.trans(k)) in _sdpa_decode_splitk_kernel: "
                                         "AssertionError('Input shapes should have M >= 1, N >= 1 and K >= 16') "
                                         "[K = 8]"),
            std::string::npos)
      << eight.primary()->detail;
  CaseResult bad = fixture().check({{"triton", "on"}}, c);
  ASSERT_TRUE(bad.verdict == Verdict::nan_mismatch || bad.verdict == Verdict::inaccurate_kernel)
      << verdict_name(bad.verdict) << (bad.primary() ? bad.primary()->detail : "");
  EXPECT_NE(bad.primary()->first_node.find("sdpa_decode_splitk"), std::string::npos) << bad.primary()->first_node;
  // Moderate scores: the padded call passes every check, the entry check included.
  c.data.magnitude = 0.05;
  EXPECT_EQ(fixture().check({{"triton", "on"}}, c).verdict, Verdict::pass);
}

// The generators find the fixed maximum on their own: the large policy draws
// decode calls with Lkv at the 256 split threshold and large data. The
// finding names the split-K node and the row's largest score, which the
// fixed phi = 5 cannot absorb (exp(s - 5) overflows f32 past s ~ 93.7).
// The self-test mutant kernel_mutant=triton-unsafe-softmax (triton.sdpa's
// online softmax as at executorch 4495d959e2, before safe_diff): the
// generators find a fully masked row, NaN where aten gives 0, on the
// triton.sdpa node, and shrink it to one query row.
TEST(CudaTriton, TheUnsafeSoftmaxMutantIsCaughtAsNaNAndShrunk) {
  TargetRun r = fixture().campaign({{"triton", "on"}, {"kernel_mutant", "triton-unsafe-softmax"}},
                                  GenPolicy::defaults(), 1, 2000);
  const WrittenFinding* w = nullptr;
  for (const auto& f : r.findings)
    if (!w && f.verdict == "nan-mismatch") w = &f;
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  EXPECT_NE(w->finding.first_node.find("triton.sdpa.default"), std::string::npos) << w->finding.first_node;
  EXPECT_NE(w->finding.detail.find("golden 0 (fully masked row)"), std::string::npos) << w->finding.detail;
  const ConcreteSizes s = concrete_sizes(w->shrunk, w->shrunk.runs()[0]);
  EXPECT_EQ(s.Lq, 1) << case_summary(w->shrunk);
  EXPECT_EQ(s.Hq, 1) << case_summary(w->shrunk);
  std::printf("triton-unsafe-softmax: %s at case %lld: %s\n", w->verdict.c_str(),
              static_cast<long long>(w->iteration), case_summary(w->shrunk).c_str());
}

// executorch 2025-12-17 (option executorch; 4495d959e2): a per-head mask,
// which main refuses, is taken and read at head 0 for every head, so the
// rewrite is unsound; a fully masked row is NaN where aten gives 0 (main: 0).
// D 12 (not a multiple of 8): the dispatcher keeps aten SDPA, whose bool
// mask reaches triton.sdpa as it is (a fused call's would be a bias).
TEST(CudaTriton, At2025_12_17APerHeadMaskIsReadAtHeadZeroAndAFullyMaskedRowIsNaN) {
  const Options main{{"triton", "on"}}, old{{"triton", "on"}, {"executorch", "2025-12-17"}};
  Case c = decode(1.0);
  c.q_heads = c.kv_heads = 2;
  c.q_len = c.kv_len = 4;
  c.head_dim = c.value_dim = 12;
  c.data.distribution = Distribution::normal;
  c.mask = MaskSpec{DType::b8, {SymExpr(1), SymExpr(2), SymExpr(4), SymExpr(4)}, MaskPattern::random, 0.5};
  CaseResult refused = fixture().check(main, c);
  ASSERT_EQ(refused.verdict, Verdict::invalid_rewrite) << verdict_name(refused.verdict);
  EXPECT_NE(refused.primary()->detail.find("attn_mask head dimension must be 1"), std::string::npos)
      << refused.primary()->detail;
  CaseResult head0 = fixture().check(old, c);
  EXPECT_EQ(head0.verdict, Verdict::unsound_rewrite) << verdict_name(head0.verdict);
  c.mask->shape[1] = SymExpr(1);  // one mask for both heads: as aten reads it
  EXPECT_EQ(fixture().check(old, c).verdict, Verdict::pass);
  c.mask->pattern = MaskPattern::padding;  // no key kept: every row fully masked
  c.mask->param = 0;
  EXPECT_EQ(fixture().check(main, c).verdict, Verdict::pass);
  CaseResult nan = fixture().check(old, c);
  ASSERT_EQ(nan.verdict, Verdict::nan_mismatch) << verdict_name(nan.verdict);
  EXPECT_NE(nan.primary()->detail.find("golden 0 (fully masked row)"), std::string::npos) << nan.primary()->detail;
}

// A repro script of a case checked with a self-test option says so.
TEST(CudaTriton, TheKernelMutantIsNamedAsASelfTestDeviationOfTheRepro) {
  auto target = fixture().registry.make("cuda", {{"triton", "on"}, {"kernel_mutant", "triton-unsafe-softmax"}});
  const std::vector<std::string> d = target->upstream_repro().deviations;
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].find("option kernel_mutant=triton-unsafe-softmax"), std::string::npos) << d[0];
  EXPECT_TRUE(fixture().registry.make("cuda", {{"triton", "on"}})->upstream_repro().deviations.empty());
  const std::vector<std::string> tree =
      fixture().registry.make("cuda", {{"triton", "on"}, {"executorch", "2025-12-17"}})->upstream_repro().deviations;
  ASSERT_EQ(tree.size(), 1u);
  EXPECT_NE(tree[0].find("option executorch=2025-12-17"), std::string::npos) << tree[0];
  // Without the Triton kernels it changes nothing; a wrong replacement is named too.
  EXPECT_TRUE(fixture().registry.make("cuda", {{"kernel_mutant", "triton-unsafe-softmax"}})
                  ->upstream_repro().deviations.empty());
  const std::vector<std::string> r =
      fixture().registry.make("cuda", {{"mutant", "replace-drops-scale"}})->upstream_repro().deviations;
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("option mutant=replace-drops-scale"), std::string::npos) << r[0];
}

// The policy is the large one as it was before its long lengths and
// serving masks (batch 2, the default mask weights), under which seed 33
// finds it at case 69 (seed 1: at case 1,901; at case 501 before the
// Triton space drew head dims of at least 16 at every size).
TEST(CudaTriton, SplitKFixedMaxIsFoundByTheGeneratorsFromAFixedSeed) {
  GenPolicy p = GenPolicy::large();
  p.max_batch = 2;
  p.batch_rank_weights = {3, 1};
  p.mask_kind_weights = GenPolicy::defaults().mask_kind_weights;
  p.p_long_len = 0;
  p.p_serving_mask = 0;
  TargetRun r = fixture().campaign({{"triton", "on"}}, p, 33, 120);
  const WrittenFinding* w = nullptr;
  for (const auto& f : r.findings)
    if (!w && f.finding.first_node.find("sdpa_decode_splitk") != std::string::npos &&
        (f.verdict == "nan-mismatch" || f.verdict == "inaccurate-kernel"))
      w = &f;
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  EXPECT_EQ(w->finding.kernel_set, "triton");
  const std::string& d = w->finding.detail;
  const size_t at = d.find("the row's largest score ");
  ASSERT_NE(at, std::string::npos) << d;
  EXPECT_GT(std::stod(d.substr(at + 24)), 93.7) << d;
  // Shrunk to the routing's edge: one query, the threshold's 256 keys.
  const ConcreteSizes s = concrete_sizes(w->shrunk, w->shrunk.runs()[0]);
  EXPECT_EQ(s.Lq, 1);
  EXPECT_EQ(s.Lkv, 256);
  std::printf("split-K: %s at case %lld: %s\n", w->verdict.c_str(), static_cast<long long>(w->iteration), d.c_str());
}

}  // namespace
}  // namespace sdpa::cuda
