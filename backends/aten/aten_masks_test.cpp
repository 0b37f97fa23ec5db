// The masks of batched serving on the aten target: a fixed-seed campaign
// under the large policy's length and mask knobs reaches each serving
// pattern emptying a whole key tile at every kv block edge (511 to 513,
// 1024 and 1024 + 1), counts it in the coverage, and stays clean.
#include <gtest/gtest.h>

#include <cstdio>

#include "backends/aten/aten_target.h"
#include "backends/common/sdpa_entry.h"
#include "harness/case/tensor_data.h"
#include "generators/case_classes.h"
#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "oracles/dual_oracle.h"
#include "reports/campaign_stats.h"
#include "reports/run_summary.h"

namespace sdpa::aten {
namespace {

int64_t failures(const TargetRun& r) {
  int64_t n = 0;
  for (const auto& [v, count] : r.verdicts) n += is_failure(*parse_verdict(v)) ? count : 0;
  return n;
}

TEST(AtenServingMasks, ALargePolicyCampaignReachesEachPatternAcrossTheKvBlockEdges) {
  using R = GenPolicy::LengthRelation;
  GenPolicy p = GenPolicy::large();
  // One head, tiny head dims and f32, short queries against long keys: the
  // lengths and masks of the large policy in a test of seconds.
  p.max_heads = 1;
  p.max_head_dim = 2;
  p.max_batch = 2;
  p.length_relation_weights = {{R::decode, 1}, {R::q_shorter, 2}};
  p.dtype_weights = {{DType::f32, 1}, {DType::f16, 0}, {DType::bf16, 0}, {DType::f64, 0}};
  p.p_dropout = 0;
  const auto factory = make_factory();
  const auto target = factory->make(resolve_options(*factory, {}));
  const auto reference = make_dual_oracle();
  CampaignStats stats(boundary_classes);
  CampaignOptions o;
  o.seed = 1;
  o.cases = 2000;
  o.on_case = stats.collector("aten");
  const TargetRun r = run_target_campaign(*target, *reference, [p](const CaseSpace& s) { return gen_case(p, s); }, o);
  EXPECT_EQ(failures(r), 0) << run_summary_text({r});
  const auto& classes = stats.targets().at("aten").coverage.classes;
  auto count = [&](const std::string& name) {
    auto it = classes.find(name);
    return it == classes.end() ? int64_t{0} : it->second;
  };
  for (const char* pattern : {"left-padding", "per-batch-padding", "block-sparse"}) {
    std::printf("%-18s", pattern);
    for (int edge : {511, 512, 513, 1024, 1025}) {
      const std::string name = std::string("empty-tile:") + pattern + ":" + std::to_string(edge);
      std::printf("  Lkv %d: %lld", edge, static_cast<long long>(count(name)));
      EXPECT_GT(count(name), 0) << name;
    }
    std::printf("\n");
  }
  for (const char* name : {"mask:left-padding", "mask:per-batch-padding", "mask:block-sparse", "empty-tile:512"})
    EXPECT_GT(count(name), 0) << name;
  std::printf("%lld cases in %.1f s\n", static_cast<long long>(r.cases), r.seconds);
}

// LibTorch 1.13's NaN for a fully masked row is its fused SDPA op's: a
// graph that ran the decomposition (ops of their own) is not explained by it.
TEST(AtenServingMasks, TheFusedOpsNanExplainsOnlyAGraphThatKeptTheSdpaNode) {
  Case c;
  c.batch = {SymExpr(1)};
  c.q_heads = c.kv_heads = 1;
  c.q_len = 2;
  c.kv_len = 2;
  c.head_dim = c.value_dim = 4;
  c.mask = MaskSpec{DType::f32, {SymExpr(2), SymExpr(2)}, MaskPattern::keep_all};
  CaseTensors t = make_case_tensors(c, {});
  t.mask->data = {-INFINITY, -INFINITY, 0.0, 0.0};  // query row 0 fully masked
  const auto reference = make_dual_oracle();
  const Golden g = reference->golden(c, t, {});
  ASSERT_TRUE(g.fully_masked.at(0));
  const auto factory = make_factory();
  const auto target = factory->make(resolve_options(*factory, {}));
  const Graph kept = sdpa_entry_graph(c);
  ASSERT_EQ(kept.count(kSdpaOp), 1);
  Graph decomposed;
  decomposed.nodes.push_back(Node{});
  decomposed.nodes.back().op = "aten._safe_softmax.default";
  EXPECT_TRUE(target->explains_nan(c, t, g, {0}, "libtorch", kept));
  EXPECT_FALSE(target->explains_nan(c, t, g, {0}, "libtorch", decomposed));
  EXPECT_FALSE(target->explains_nan(c, t, g, {0}, "portable", kept));
}

}  // namespace
}  // namespace sdpa::aten
