// ReplaceFusedSdpaWithSdpaPass rule by rule, the rewrite's arguments, and
// the invariants on a correct and on a broken rewrite.
#include "backends/cuda/replace_fused_sdpa_pass.h"

#include <gtest/gtest.h>

#include "backends/common/sdpa_entry.h"
#include "backends/cuda/cuda_test_cases.h"
#include "backends/cuda/cuda_invariants.h"
#include "backends/cuda/fused_entry.h"
#include "harness/ir/graph_verify.h"

namespace sdpa::cuda {
namespace {

Case base() { return testing::base_call(); }

Pass::Result run(const Case& c, Variant v, std::optional<FusedRule> weak = std::nullopt, bool force = false) {
  RewriteControl control;
  control.force_all = force;
  return ReplaceFusedSdpaWithSdpaPass(weak).run(fused_entry_graph(c, v), c.shape_env(), control);
}

const Node& only(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes)
    if (n.op == op) return n;
  throw std::runtime_error("no " + op);
}

TEST(ReplacePass, RewritesEachVariantToSdpaWithTheSameArguments) {
  Case c = base();
  c.scale = 0.25;
  c.dropout_p = 0.1;
  for (Variant v : {Variant::flash, Variant::efficient, Variant::cudnn}) {
    Pass::Result r = run(c, v);
    ASSERT_TRUE(r.decisions.at(0).rewrite) << variant_name(v);
    EXPECT_TRUE(verify_graph(r.graph).empty());
    EXPECT_EQ(r.graph.count(kFlashOp) + r.graph.count(kEfficientOp) + r.graph.count(kCudnnOp), 0);
    SdpaCall s = read_sdpa_call(only(r.graph, kSdpaOp));
    EXPECT_EQ(s.scale, 0.25);
    EXPECT_EQ(s.dropout_p, 0.1);
    EXPECT_FALSE(s.enable_gqa);  // Hq == Hkv
    EXPECT_FALSE(s.mask.has_value());
  }
}

TEST(ReplacePass, SetsEnableGqaForUnequalHeadsAndLeavesOutANoneScale) {
  Case c = base();
  c.kv_heads = 2;
  c.enable_gqa = true;
  Pass::Result r = run(c, Variant::flash);
  const Node& n = only(r.graph, kSdpaOp);
  EXPECT_TRUE(read_sdpa_call(n).enable_gqa);
  EXPECT_EQ(n.kwarg("scale"), nullptr);
}

TEST(ReplacePass, KeepsTheBias) {
  Case c = base();
  c.mask = MaskSpec{DType::b8, {SymExpr(1), SymExpr(1), SymExpr(3), SymExpr(3)}, MaskPattern::random, 0.5};
  Pass::Result r = run(c, Variant::efficient);
  ASSERT_TRUE(r.decisions[0].rewrite);
  SdpaCall s = read_sdpa_call(only(r.graph, kSdpaOp));
  ASSERT_TRUE(s.mask.has_value());
  EXPECT_EQ(r.graph.nodes[s.mask->node].name, "attn_bias");
}

TEST(ReplacePass, OutputsUsedKeepsALogsumexpReader) {
  Case c = base();
  c.variant = kLseReader;
  Pass::Result r = run(c, Variant::flash);
  EXPECT_FALSE(r.decisions[0].rewrite);
  EXPECT_EQ(r.decisions[0].deciding_rule, "outputs-used");
  EXPECT_EQ(r.graph.count(kFlashOp), 1);
  Pass::Result weak = run(c, Variant::flash, FusedRule::outputs_used);
  EXPECT_TRUE(weak.decisions[0].rewrite);
  EXPECT_EQ(weak.graph.count(kFlashOp), 0);
}

TEST(ReplacePass, CausalBiasKeepsACausalCallWithABias) {
  Case c = base();
  c.variant = kCausalBias;
  c.mask = MaskSpec{DType::b8, {SymExpr(1), SymExpr(1), SymExpr(3), SymExpr(3)}, MaskPattern::causal};
  Pass::Result r = run(c, Variant::efficient);
  EXPECT_FALSE(r.decisions[0].rewrite);
  EXPECT_EQ(r.decisions[0].deciding_rule, "causal-bias");
  EXPECT_TRUE(run(c, Variant::efficient, FusedRule::causal_bias).decisions[0].rewrite);
}

TEST(ReplacePass, CausalLengthsNeedsLqEqualLkvStatically) {
  Case c = base();
  c.is_causal = true;
  EXPECT_TRUE(run(c, Variant::flash).decisions[0].rewrite);
  c.kv_len = 5;
  Pass::Result r = run(c, Variant::flash);
  EXPECT_FALSE(r.decisions[0].rewrite);
  EXPECT_EQ(r.decisions[0].deciding_rule, "causal-lengths");
  c.q_len = SymExpr::symbol("s0");
  c.kv_len = SymExpr::symbol("s1");
  c.symbols = {{"s0", {3, 1, 8}}, {"s1", {3, 1, 8}}};
  EXPECT_FALSE(run(c, Variant::efficient).decisions[0].rewrite);  // equal on the hints only
  EXPECT_TRUE(run(c, Variant::efficient, FusedRule::causal_lengths).decisions[0].rewrite);
}

TEST(Invariants, HoldOnTheRewriteAndNameEachBrokenProperty) {
  Case c = base();
  c.kv_heads = 2;
  c.enable_gqa = true;
  c.scale = 0.5;
  ReplaceFusedSdpaWithSdpaPass pass;
  Graph before = fused_entry_graph(c, Variant::flash);
  Graph after = pass.run(before, c.shape_env()).graph;
  EXPECT_TRUE(fused_rewrite_invariants(pass, c.shape_env(), before, after).empty());

  Graph wrong = after;
  for (Node& n : wrong.nodes)
    if (n.op == kSdpaOp) n.kwargs = {};  // no scale, no enable_gqa
  auto broken = fused_rewrite_invariants(pass, c.shape_env(), before, wrong);
  ASSERT_EQ(broken.size(), 2u);
  EXPECT_NE(broken[0].find("enable_gqa unset"), std::string::npos) << broken[0];
  EXPECT_NE(broken[1].find("scale None, the fused call had 0.5"), std::string::npos) << broken[1];

  // The graph left as it was although the guard accepts the node.
  auto left = fused_rewrite_invariants(pass, c.shape_env(), before, before);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_NE(left[0].find("is left although the guard accepted it"), std::string::npos);
}

TEST(Invariants, ALogsumexpReaderMustKeepItsFusedProducer) {
  Case c = base();
  c.variant = kLseReader;
  ReplaceFusedSdpaWithSdpaPass strict, weak(FusedRule::outputs_used);
  Graph before = fused_entry_graph(c, Variant::efficient);
  EXPECT_TRUE(fused_rewrite_invariants(strict, c.shape_env(), before, strict.run(before, c.shape_env()).graph).empty());
  auto broken = fused_rewrite_invariants(weak, c.shape_env(), before, weak.run(before, c.shape_env()).graph);
  ASSERT_EQ(broken.size(), 1u);
  EXPECT_NE(broken[0].find("read the logsumexp"), std::string::npos) << broken[0];
}

// The pass looks inside the branches of a cond; a node there is decided
// and named by where it sits.
TEST(ReplacePass, RewritesInsideACondBranch) {
  Case c = base();
  c.variant = kCond;
  Pass::Result r = run(c, Variant::flash);
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_EQ(r.decisions[0].node, "%cond/true_branch/%_scaled_dot_product_flash_attention");
  EXPECT_TRUE(r.decisions[0].rewrite);
  EXPECT_TRUE(verify_graph(r.graph).empty());
  EXPECT_EQ(r.graph.count(kFlashOp), 0);
  EXPECT_EQ(r.graph.count(kSdpaOp), 2);  // the rewrite and the false branch's own

  // A logsumexp read inside the branch keeps the fused node.
  c.variant = kCondLseReader;
  Pass::Result kept = run(c, Variant::flash);
  ASSERT_EQ(kept.decisions.size(), 1u);
  EXPECT_FALSE(kept.decisions[0].rewrite);
  EXPECT_EQ(kept.decisions[0].deciding_rule, "outputs-used");
  EXPECT_EQ(kept.graph.count(kFlashOp), 1);
}

TEST(ReplacePass, HoldsABranchNodeByItsName) {
  Case c = base();
  c.variant = kCond;
  RewriteControl control;
  control.held.insert("%cond/true_branch/%_scaled_dot_product_flash_attention");
  Pass::Result r = ReplaceFusedSdpaWithSdpaPass().run(fused_entry_graph(c, Variant::flash), c.shape_env(), control);
  EXPECT_EQ(r.graph.count(kFlashOp), 1);
}

TEST(Invariants, AreCheckedInsideCondBranches) {
  Case c = base();
  c.variant = kCond;
  c.scale = 0.5;
  ReplaceFusedSdpaWithSdpaPass pass;
  Graph before = fused_entry_graph(c, Variant::flash);
  Graph after = pass.run(before, c.shape_env()).graph;
  EXPECT_TRUE(fused_rewrite_invariants(pass, c.shape_env(), before, after).empty());
  Graph wrong = after;
  for (Node& n : wrong.nodes[wrong.find("cond")].subgraphs[0]->nodes)
    if (n.op == kSdpaOp) n.kwargs = {};  // the rewrite in the branch loses its scale
  auto broken = fused_rewrite_invariants(pass, c.shape_env(), before, wrong);
  ASSERT_EQ(broken.size(), 1u);
  EXPECT_EQ(broken[0].rfind("%cond/true_branch/%", 0), 0u) << broken[0];
  // Left unrewritten in a branch although the guard accepts it.
  auto left = fused_rewrite_invariants(pass, c.shape_env(), before, before);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_NE(left[0].find("is left although the guard accepted it"), std::string::npos);
}

}  // namespace
}  // namespace sdpa::cuda
