// Non-finite data and empty tensors on the llm target, from fixed seeds:
// the campaigns draw them (counted in the coverage), the kernel's NaN-dropping
// row max and its Lq = 0 division are found and shrunk, and a kernel that
// turns NaN into 0 is caught.
#include <gtest/gtest.h>

#include <iostream>

#include "backends/all_targets.h"
#include "backends/target_fixture.h"
#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "oracles/dual_oracle.h"
#include "reports/campaign_stats.h"
#include "reports/run_summary.h"

namespace sdpa::llm {
namespace {

struct Fixture : TargetFixture {

  TargetRun campaign(const Options& options, const GenPolicy& p, int64_t cases, uint64_t seed,
                     CampaignStats* stats = nullptr, int64_t stop_after = 0) const {
    auto target = registry.make("llm", options);
    CampaignOptions o;
    o.seed = seed;
    o.cases = cases;
    o.stop_after = stop_after;
    o.max_shrink_steps = 60;
    if (stats) o.on_case = stats->collector("llm");
    CaseGeneratorFactory generators = [p](const CaseSpace& s) { return gen_case(p, s); };
    return run_target_campaign(*target, *reference, generators, o);
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const WrittenFinding* first(const TargetRun& r, const std::string& verdict, const std::string& detail) {
  for (const auto& w : r.findings)
    if (w.verdict == verdict && contains(w.finding.detail, detail)) return &w;
  return nullptr;
}

TEST(LlmEdgeData, DefaultCampaignsDrawNonFiniteAndEmptyCasesAndCountThem) {
  CampaignStats stats([](const Case&) { return std::vector<std::string>{}; });
  TargetRun r = fixture().campaign({{"guard", "upstream"}}, GenPolicy::defaults(), 1000, 20261201, &stats);
  const Coverage& c = stats.targets().at("llm").coverage;
  for (const char* kind : {"finite", "nan", "+inf", "-inf", "empty"}) EXPECT_GT(c.data.count(kind), 0u) << kind;
  EXPECT_GT(c.data.at("finite"), 900);
  EXPECT_EQ(r.cases, 1000);
}

// Lq = Lkv = 513, unmasked, NaN in k: custom_sdpa's first kv block
// (512 keys, all in the vector lanes) has a NaN score, std::max drops it, the
// block is skipped, and the row comes out finite from the second block
// alone, where aten gives NaN. The policy aims the draws at that corner.
TEST(LlmEdgeData, TheUpstreamNanDroppingRowMaxIsFoundAndShrunk) {
  using P = GenPolicy;
  GenPolicy p = GenPolicy::large();
  p.p_special = 1.0;
  p.special_value_weights = {{SpecialValue::nan, 1}};
  p.special_tensor_weights = {{"k", 1}};
  p.length_relation_weights = {{P::LengthRelation::equal, 1}};
  p.p_tile_edge_len = 0.5;
  p.tile_edges = {513};
  p.mask_kind_weights = {{P::MaskKind::none, 1}};
  p.p_causal = 0;
  p.symbol_mode_weights = {{P::SymbolMode::none, 1}};
  p.p_start_pos = 0;  // Lkv == Lq: no key is cut (defect (a))
  // Calls the pass rewrites and custom_sdpa runs, small apart from the lengths.
  p.dtype_weights = {{DType::f32, 1}, {DType::f16, 0}, {DType::bf16, 0}, {DType::f64, 0}};
  p.p_value_dim_differs = 0;
  p.batch_rank_weights = {0, 1};
  p.p_dropout = 0;
  p.p_empty = 0;
  p.max_heads = 1;
  p.max_head_dim = 1;
  p.max_batch = 2;
  p.p_long_len = 0;  // the lengths of the regular draw, whose shrinking the test follows
  p.special_count_weights = {{1, 1}};
  // Lengths reach 513 from RapidCheck size 72 (the cap scales with size).
  TargetRun r = fixture().campaign({{"guard", "upstream"}}, p, 200, 20261201, nullptr, 1);
  const WrittenFinding* w = first(r, "nan-mismatch", ", golden nan");
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  std::cout << "found at case " << w->iteration << ", " << w->shrink_steps << " shrink steps, " << r.seconds
            << " s: " << w->finding.detail << "\n";
  EXPECT_TRUE(contains(w->finding.detail, "first output")) << w->finding.detail;
  const ConcreteSizes s = concrete_sizes(w->shrunk, w->shrunk.runs()[0]);
  EXPECT_GT(s.Lq, 512) << case_summary(w->shrunk);
  EXPECT_LE(s.Lq, 520) << case_summary(w->shrunk);
  EXPECT_EQ(s.Hq, 1) << case_summary(w->shrunk);
  EXPECT_EQ(s.E, 1) << case_summary(w->shrunk);
  EXPECT_EQ(s.batch_numel(), 1) << case_summary(w->shrunk);
  ASSERT_TRUE(w->shrunk.data.special);
  EXPECT_EQ(w->shrunk.data.special->count, 1);
}

// The self-test: a custom_sdpa that writes NaN outputs as 0 is caught (a
// number where aten gives NaN) and shrunk to a small case.
TEST(LlmEdgeData, AKernelThatTurnsNanIntoZeroIsCaughtAndShrunk) {
  GenPolicy p = GenPolicy::defaults();
  p.p_special = 0.5;
  TargetRun r = fixture().campaign({{"guard", "contract"}, {"kernel_mutant", "nan-to-zero"}}, p, 300, 20261201);
  const WrittenFinding* w = first(r, "nan-mismatch", ", golden nan");
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  const ConcreteSizes s = concrete_sizes(w->shrunk, w->shrunk.runs()[0]);
  EXPECT_LE(s.Lq * s.Lkv * s.Hq * s.batch_numel(), 4) << case_summary(w->shrunk);
  TargetRun clean = fixture().campaign({{"guard", "contract"}}, p, 300, 20261201);
  EXPECT_EQ(first(clean, "nan-mismatch", ", golden nan"), nullptr) << run_summary_text({clean});
}

// Lq = 0: qSlice = (qSize - 1) / qSplitSize + 1 divides by zero (SIGFPE).
TEST(LlmEdgeData, TheUpstreamQueryLengthZeroCrashIsFoundAndShrunk) {
  GenPolicy p = GenPolicy::defaults();
  p.p_empty = 0.2;
  p.empty_dim_weights = {{GenPolicy::EmptyDim::q_len, 1}};
  TargetRun r = fixture().campaign({{"guard", "upstream"}}, p, 300, 20261201);
  const WrittenFinding* w = first(r, "crash", "SIGFPE");
  ASSERT_NE(w, nullptr) << run_summary_text({r});
  const ConcreteSizes s = concrete_sizes(w->shrunk, w->shrunk.runs()[0]);
  EXPECT_EQ(s.Lq, 0);
  EXPECT_LE(s.Lkv, 1) << case_summary(w->shrunk);
  EXPECT_EQ(s.Hq, 1) << case_summary(w->shrunk);
}

// Causal, Lq = Lkv = 2, k[1] = NaN: row 0 drops key 1. aten adds the causal
// -inf to its NaN score (row 0 NaN); custom_sdpa writes -inf over it (row 0
// is v[0]). Tensor data no guard can see: the declared divergence.
TEST(LlmEdgeData, ACausallyDroppedNanKeyIsTheDeclaredDivergence) {
  Case c;
  c.batch = {SymExpr(1)};
  c.q_len = c.kv_len = 2;
  c.is_causal = true;
  c.data.seed = 3;
  c.data.special = SpecialData{SpecialValue::nan, "k", SpecialPlace::row, 1};
  // The special row lands on key bits(3, "special_k", 0) % 2: pick a seed where it is key 1.
  while (CounterStream(c.data.seed, "special_k").bits(0) % 2 != 1) ++c.data.seed;
  auto target = fixture().registry.make("llm", {{"guard", "contract"}});
  CaseResult r = run_case(*target, *fixture().reference, c);
  ASSERT_EQ(r.verdict, Verdict::known_divergence);
  EXPECT_NE(r.primary()->detail.find("custom-sdpa-causal-drops-non-finite"), std::string::npos)
      << r.primary()->detail;
  c.is_causal = false;  // unmasked: key 1 is kept, both give NaN
  EXPECT_EQ(run_case(*fixture().registry.make("llm", {{"guard", "contract"}}), *fixture().reference, c).verdict,
            Verdict::pass);
}

}  // namespace
}  // namespace sdpa::llm
