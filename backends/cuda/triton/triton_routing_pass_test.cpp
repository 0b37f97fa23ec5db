#include "backends/cuda/triton/triton_routing_pass.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/common/sdpa_entry.h"
#include "backends/cuda/triton/triton_sdpa_kernel.h"
#include "backends/cuda/triton/triton_splitk_kernel.h"
#include "backends/cuda/triton/triton_test_util.h"
#include "harness/ir/graph_verify.h"

namespace sdpa::cuda_triton {
namespace {

Case decode_case(SymExpr Lq, SymExpr Lkv, int64_t D) {
  Case c;
  c.dtype = DType::bf16;
  c.batch = {SymExpr(1)};
  c.q_heads = 2;
  c.kv_heads = 2;
  c.q_len = Lq;
  c.kv_len = Lkv;
  c.head_dim = D;
  c.value_dim = D;
  return c;
}

Pass::Result route(const Case& c, RewriteControl control = {}) {
  return ReplaceEdgeOpWithTritonOpPass().run(sdpa_entry_graph(c), c.shape_env(), control);
}

const Node& triton_node(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op == kTritonSdpaOp || n.op == kTritonSplitKOp) return n;
  throw std::runtime_error("no Triton node");
}

TEST(TritonRouting, PicksSplitKExactlyUnderItsRule) {
  EXPECT_TRUE(picks_splitk(1, 256, 64));
  EXPECT_TRUE(picks_splitk(1, 4096, 1));
  EXPECT_FALSE(picks_splitk(1, 255, 64));  // L_kv >= 256
  EXPECT_FALSE(picks_splitk(2, 256, 64));  // L_q == 1
  EXPECT_FALSE(picks_splitk(1, 256, 48));  // D a power of two
  EXPECT_FALSE(picks_splitk(1, 256, 0));   // D > 0
  EXPECT_FALSE(picks_splitk(SymExpr::symbol("s0"), 256, 64));  // isinstance(L_q, int)
  EXPECT_FALSE(picks_splitk(1, SymExpr::symbol("s1"), 64));    // isinstance(L_kv, int)
}

TEST(TritonRouting, DecisionNamesTheKernelAndNeverRefuses) {
  struct Want {
    SymExpr Lq, Lkv;
    int64_t D;
    const char* route;
    const char* op;
  };
  for (const Want& w : {Want{1, 256, 64, kRouteSplitK, kTritonSplitKOp},
                        Want{1, 255, 64, kRouteStandard, kTritonSdpaOp},
                        Want{4, 300, 8, kRouteStandard, kTritonSdpaOp},
                        Want{1, 300, 12, kRouteStandard, kTritonSdpaOp}}) {
    Pass::Result r = route(decode_case(w.Lq, w.Lkv, w.D));
    ASSERT_EQ(r.decisions.size(), 1u);
    EXPECT_TRUE(r.decisions[0].rewrite);
    EXPECT_EQ(r.decisions[0].deciding_rule, w.route);
    EXPECT_EQ(r.graph.count(w.op), 1);
    EXPECT_EQ(r.graph.count(kSdpaOp), 0);
    EXPECT_TRUE(verify_graph(r.graph).empty());
  }
}

TEST(TritonRouting, SymbolicLengthsPickTheStandardKernel) {
  Case c = decode_case(1, SymExpr::symbol("s0"), 64);
  c.symbols["s0"] = {512, 256, 1024};  // every size in range would pass >= 256
  c.runtime = {{{"s0", 512}}};
  Pass::Result r = route(c);
  EXPECT_EQ(r.decisions[0].deciding_rule, kRouteStandard);
  EXPECT_EQ(r.graph.count(kTritonSdpaOp), 1);
}

TEST(TritonRouting, MaskAndCausalAreNotConsulted) {
  Case c = decode_case(1, 256, 64);
  c.is_causal = true;
  EXPECT_EQ(route(c).decisions[0].deciding_rule, kRouteSplitK);
  c.is_causal = false;
  c.mask = MaskSpec{DType::f32, {SymExpr(1), SymExpr(1), SymExpr(1), SymExpr(256)}, MaskPattern::causal};
  EXPECT_EQ(route(c).decisions[0].deciding_rule, kRouteSplitK);
}

TEST(TritonRouting, ArgsCarriedWithScaleAndEnableGqaPositional) {
  Case c = decode_case(3, 3, 4);
  c.is_causal = true;
  c.dropout_p = 0.25;
  Graph entry = sdpa_entry_graph(c);
  const Node& aten = entry.nodes[entry.find("scaled_dot_product_attention")];
  Pass::Result r = route(c);
  const Node& n = triton_node(r.graph);
  ASSERT_EQ(n.args.size(), 8u);
  for (int i = 0; i < 3; ++i) 
    EXPECT_EQ(r.graph.nodes[std::get<ValueRef>(n.args[i]).node].name, std::string(1, "qkv"[i]));
  EXPECT_TRUE(std::holds_alternative<None>(n.args[3]));
  EXPECT_EQ(std::get<double>(n.args[4]), 0.25);
  EXPECT_EQ(std::get<bool>(n.args[5]), true);
  EXPECT_EQ(std::get<double>(n.args[6]), 0.0);  // absent scale: the Triton default, read as 1/sqrt(D)
  EXPECT_EQ(std::get<bool>(n.args[7]), false);
  EXPECT_TRUE(n.kwargs.empty());
  EXPECT_EQ(n.outputs[0].shape, aten.outputs[0].shape);  // meta copied
  c.scale = 0.5;
  c.enable_gqa = true;
  const Node& scaled = triton_node(route(c).graph);
  EXPECT_EQ(std::get<double>(scaled.args[6]), 0.5);
  EXPECT_EQ(std::get<bool>(scaled.args[7]), true);
}

TEST(TritonRouting, HeldNodeStaysAndLowRankIsKeptAsUpstreamLogsIt) {
  RewriteControl held;
  held.held = {"%scaled_dot_product_attention"};
  Pass::Result r = route(decode_case(1, 256, 64), held);
  EXPECT_EQ(r.graph.count(kSdpaOp), 1);
  Case rank3 = decode_case(1, 256, 64);
  rank3.batch = {};  // q_shape[3] raises IndexError inside the pass's try
  Pass::Result kept = route(rank3);
  EXPECT_FALSE(kept.decisions[0].rewrite);
  EXPECT_EQ(kept.decisions[0].deciding_rule, "failed-to-replace");
  EXPECT_EQ(kept.graph.count(kSdpaOp), 1);
}

// executorch 2025-12-17 (the pass at stored f74026a6): no _pick_sdpa_kernel,
// so a decode call goes to triton.sdpa and a rank-3 call is replaced too
// (the op then refuses it when it runs).
TEST(TritonRouting, At2025_12_17EveryNodeBecomesTritonSdpa) {
  const ReplaceEdgeOpWithTritonOpPass old(SdpaTree::dec_2025);
  Case rank3 = decode_case(1, 256, 64);
  rank3.batch = {};
  for (const Case& c : {decode_case(1, 256, 64), rank3}) {
    Pass::Result r = old.run(sdpa_entry_graph(c), c.shape_env(), {});
    ASSERT_EQ(r.decisions.size(), 1u);
    EXPECT_TRUE(r.decisions[0].rewrite);
    EXPECT_EQ(r.decisions[0].deciding_rule, kRouteStandard);
    EXPECT_EQ(triton_node(r.graph).op, kTritonSdpaOp);
    EXPECT_EQ(r.graph.count(kSdpaOp), 0);
  }
}

TEST(TritonRouting, CausalDecodeRoutedToSplitKAttendsToEveryKey) {
  // semantics §5 item 4: aten with is_causal gives v[0]; split-K ignores causal.
  Case c = decode_case(1, 256, 64);
  c.q_heads = c.kv_heads = 1;
  c.is_causal = true;
  Pass::Result r = route(c);
  auto f = [](int64_t, int64_t, int64_t l, int64_t e) { return std::sin(0.1 * l + e); };
  std::map<std::string, Tensor> in{{"q", testing::bhld({1, 1, 1, 64}, f)},
                                   {"k", testing::bhld({1, 1, 256, 64}, f)},
                                   {"v", testing::bhld({1, 1, 256, 64}, f)}};
  KernelSet exact("exact");
  exact.add(kTritonSplitKOp, triton_splitk_kernel(Numerics::exact));
  Tensor out = interpret(r.graph, exact, in, {}).outputs[0];
  EXPECT_GT(std::fabs(out.data[1] - in["v"].data[1]), 1e-3);  // not v[0]
}

}  // namespace
}  // namespace sdpa::cuda_triton
