// The shared transform (decompose_sdpa.py) under policy shared-decomp: no
// guard; masked, causal, dropout and GQA calls decompose and equal aten; the
// head check reads dim 1 and raises where aten broadcasts; unknown kwargs
// raise; each mutant of the emitter is told apart from the right one.
#include "backends/cortex_m/shared_decomposition.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/all_targets.h"
#include "backends/cortex_m/cortex_m_ops.h"
#include "backends/cortex_m/decompose_sdpa_pass.h"
#include "backends/cortex_m/matmul_to_bmm_pass.h"
#include "harness/check/check.h"
#include "harness/io/json_reader.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/graph_verify.h"
#include "harness/ir/interpreter.h"
#include "harness/ir/kernels/reference_kernels.h"
#include "oracles/dual_oracle.h"

namespace sdpa::cortex_m {
namespace {

Case call(int64_t hq, int64_t hkv, int64_t lq, int64_t lkv, int64_t e) {
  Case c;
  c.batch = {SymExpr(1)};
  c.q_heads = hq;
  c.kv_heads = hkv;
  c.q_len = lq;
  c.kv_len = lkv;
  c.head_dim = c.value_dim = e;
  c.data.seed = 17;
  return c;
}

std::map<std::string, Tensor> inputs(const Case& c) {
  CaseTensors t = make_case_tensors(c, {});
  std::map<std::string, Tensor> in{{"q", t.q}, {"k", t.k}, {"v", t.v}};
  if (t.mask) in["attn_mask"] = *t.mask;
  return in;
}

Graph shared(const Case& c, SharedMutant m = SharedMutant::none) {
  return DecomposeSdpaPass(Policy::shared_decomp, std::nullopt, m).run(sdpa_entry_graph(c), c.shape_env()).graph;
}

Tensor run(const Graph& g, const Case& c) {
  return interpret(g, exact_kernels(), inputs(c), RunContext{{}, c.data.seed}).outputs.at(0);
}

double max_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape, b.shape);
  double d = 0;
  for (int64_t i = 0; i < a.numel() && a.shape == b.shape; ++i) d = std::fmax(d, std::fabs(a.data[i] - b.data[i]));
  return d;
}

std::string raised(const Case& c) {
  try {
    shared(c);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

const TargetRegistry& registry() {
  static const TargetRegistry r = [] {
    TargetRegistry t;
    register_all_targets(t);
    return t;
  }();
  return r;
}

CaseResult check(const Case& c, const Options& o) {
  static const auto reference = make_dual_oracle();
  return run_case(*registry().make("cortex-m", o), *reference, c);
}

// MQA without enable_gqa: aten broadcasts the one kv head, the shared
// transform reads Hq != Hk and raises, so export fails on a call aten takes.
TEST(SharedDecomp, MqaWithoutTheFlagRaisesAndIsAnUnexpectedError) {
  Case c = call(4, 1, 2, 2, 4);
  EXPECT_EQ(raised(c), "ValueError: SDPA head mismatch requires enable_gqa=True: Hq=4, Hk=1");
  CaseResult r = check(c, {{"guard", "shared-decomp"}});
  ASSERT_EQ(r.verdict, Verdict::unexpected_error) << verdict_name(r.verdict);
  EXPECT_NE(r.primary()->detail.find("pass decompose-sdpa raised: ValueError: SDPA head mismatch requires "
                                     "enable_gqa=True: Hq=4, Hk=1"),
            std::string::npos)
      << r.primary()->detail;
  // The decompose guard keeps the same call (equal-heads): no error there.
  EXPECT_EQ(check(c, {{"guard", "decompose"}}).verdict, Verdict::rejected);
  // With the flag, k and v are tiled to 4 heads and the call passes.
  c.enable_gqa = true;
  EXPECT_EQ(raised(c), "");
  EXPECT_EQ(check(c, {{"guard", "shared-decomp"}}).verdict, Verdict::pass);
}

// The head counts are q.shape[1] and k.shape[1]: at rank 3 ([H, L, E]) those
// are the sequence lengths, so Lq != Lkv raises; Lq == Lkv decomposes.
TEST(SharedDecomp, AtRankThreeTheHeadCheckReadsTheSequenceLengths) {
  Case c = call(2, 2, 3, 5, 4);
  c.batch = {};
  EXPECT_EQ(raised(c), "ValueError: SDPA head mismatch requires enable_gqa=True: Hq=3, Hk=5");
  c.enable_gqa = true;
  EXPECT_EQ(raised(c), "ValueError: GQA mismatch: Hq=3, Hk=5");
  c.q_len = 6;
  c.kv_len = 3;
  EXPECT_EQ(raised(c), "ValueError: not enough values to unpack (expected 4, got 3)");
  c.q_len = 3;
  c.enable_gqa = false;
  EXPECT_LT(max_diff(run(shared(c), c), run(sdpa_entry_graph(c), c)), 1e-12);
}

// Causal [1,2,4,4]: two bmm after MatmulToBmm, two mul.Scalar of sqrt(1/sqrt(4)),
// the tril mask as where(!m, -inf, 0) added, _safe_softmax; equal to aten, and
// row 0 (which keeps key 0 only) is v[0].
TEST(SharedDecomp, CausalDecompositionEqualsAtenAndRowZeroIsTheFirstValue) {
  Case c = call(2, 2, 4, 4, 4);
  c.is_causal = true;
  const Graph d = MatmulToBmmPass().run(shared(c), {}).graph;
  EXPECT_TRUE(verify_graph(d).empty()) << print_graph(d);
  EXPECT_EQ(d.count(kSdpaOp), 0);
  EXPECT_EQ(d.count("aten.bmm.default"), 2) << print_graph(d);
  EXPECT_EQ(d.count("aten.mul.Scalar"), 2);
  for (const Node& n : d.nodes) {
    if (n.op == "aten.mul.Scalar") {
      EXPECT_DOUBLE_EQ(std::get<double>(n.args[1]), 0.7071067811865476);
    }
  }
  EXPECT_EQ(d.count("aten.tril.default"), 1);
  EXPECT_EQ(d.count("aten.add.Tensor"), 1);
  EXPECT_EQ(d.count("aten._safe_softmax.default"), 1);
  for (const Node& n : d.nodes) {
    if (n.op == "aten.where.Scalar") {
      EXPECT_EQ(std::get<double>(n.args[1]), -INFINITY);
    }
  }
  const Tensor got = run(d, c), want = run(sdpa_entry_graph(c), c);
  EXPECT_LT(max_diff(got, want), 1e-12);
  const Tensor v = inputs(c).at("v");
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t e = 0; e < 4; ++e) EXPECT_NEAR(got.data[h * 16 + e], v.data[h * 16 + e], 1e-15) << h << "," << e;
  // Without the causal mask the decomposition is not aten.
  EXPECT_GT(max_diff(run(shared(c, SharedMutant::drop_causal), c), want), 1e-3);
}

// GQA [1,4,2,4] over two kv heads: heads 0 and 1 read kv head 0, heads 2 and
// 3 kv head 1 (unsqueeze(2).expand.reshape); tiling (h % 2) reads the wrong ones.
TEST(SharedDecomp, GqaHeadsInterleave) {
  Case c = call(4, 2, 2, 2, 4);
  c.enable_gqa = true;
  auto in = inputs(c);
  for (int64_t h = 1; h < 4; ++h)  // every query head the same: the outputs then differ only by kv head
    for (int64_t i = 0; i < 8; ++i) in["q"].data[h * 8 + i] = in["q"].data[i];
  const Graph d = shared(c);
  EXPECT_EQ(d.count("aten.unsqueeze.default"), 2);
  EXPECT_EQ(d.count("aten.expand.default"), 2);
  const Tensor got = interpret(d, exact_kernels(), in, {}).outputs[0];
  auto head = [](const Tensor& t, int64_t h) {
    return std::vector<double>(t.data.begin() + h * 8, t.data.begin() + h * 8 + 8);
  };
  EXPECT_EQ(head(got, 0), head(got, 1));
  EXPECT_EQ(head(got, 2), head(got, 3));
  EXPECT_NE(head(got, 1), head(got, 2));
  const Tensor want = interpret(sdpa_entry_graph(c), exact_kernels(), in, {}).outputs[0];
  EXPECT_LT(max_diff(got, want), 1e-12);
  const Tensor tiled = interpret(shared(c, SharedMutant::gqa_tile), exact_kernels(), in, {}).outputs[0];
  EXPECT_EQ(head(tiled, 1), head(got, 2));  // head 1 reads kv head 1 there
}

// v is expanded to k's D: a value dim other than D raises in expand, a value
// dim of 1 broadcasts to D and the output comes out [.., D].
TEST(SharedDecomp, GqaExpandsValueToTheKeyHeadDim) {
  Case c = call(4, 2, 2, 5, 8);
  c.enable_gqa = true;
  c.value_dim = 4;
  EXPECT_EQ(raised(c),
            "RuntimeError: The expanded size of the tensor (8) must match the existing size (4) at non-singleton "
            "dimension 4.  Target sizes: [1, 2, 2, 5, 8].  Tensor sizes: [1, 2, 1, 5, 4]");
  c.value_dim = 1;
  const Graph d = shared(c);
  EXPECT_EQ(d.info(d.outputs[0]).shape, (SymShape{1, 4, 2, 8}));
  const CaseResult r = check(c, {{"guard", "shared-decomp"}, {"quantize", "off"}});
  EXPECT_EQ(r.verdict, Verdict::shape_mismatch) << verdict_name(r.verdict);
  std::printf("%s: %s\n", verdict_name(r.verdict), r.primary() ? r.primary()->detail.c_str() : "");
}

// A bool mask as where(!m, -inf, 0) added; a fully masked row gives 0
// (_safe_softmax); a float mask added as is. Both equal aten.
TEST(SharedDecomp, MasksAreAddedAndEqualAten) {
  Case c = call(2, 2, 3, 4, 4);
  c.mask = MaskSpec{DType::b8, {SymExpr(3), SymExpr(4)}, MaskPattern::full_row, 1};
  const Graph d = shared(c);
  EXPECT_EQ(d.count("aten.where.Scalar"), 1) << print_graph(d);
  EXPECT_EQ(d.count("aten.add.Tensor"), 1);
  const Tensor want = run(sdpa_entry_graph(c), c);
  EXPECT_LT(max_diff(run(d, c), want), 1e-12);
  EXPECT_GT(max_diff(run(shared(c, SharedMutant::drop_mask), c), want), 1e-3);
  c.mask = MaskSpec{DType::f32, {SymExpr(1), SymExpr(2), SymExpr(3), SymExpr(4)}, MaskPattern::random, 0.5};
  const Graph f = shared(c);
  EXPECT_EQ(f.count("aten.where.Scalar"), 0);
  EXPECT_LT(max_diff(run(f, c), run(sdpa_entry_graph(c), c)), 1e-12);
}

TEST(SharedDecomp, DropoutIsDecomposed) {
  Case c = call(2, 2, 3, 4, 4);
  c.dropout_p = 0.5;
  const Graph d = shared(c);
  EXPECT_EQ(d.count("aten.native_dropout.default"), 1);
  const Tensor want = run(sdpa_entry_graph(c), c);
  EXPECT_LT(max_diff(run(d, c), want), 1e-12);
  EXPECT_GT(max_diff(run(shared(c, SharedMutant::drop_dropout), c), want), 1e-3);
}

// Under int8, dropout's 1 / (1 - p) multiplies the kept weights before P is
// quantized: the error bound scales v's step and the output with it. This
// call (p = 0.9, one key) is 0.028 off the golden, within the scaled bound.
TEST(SharedDecomp, Int8DropoutStaysWithinTheScaledBound) {
  Case c = call(3, 3, 1, 1, 1);
  c.batch = {SymExpr(2)};
  c.dropout_p = 0.9;
  c.scale = 0.5;
  c.data.seed = 2425964389181201;
  const CaseResult r = check(c, {{"guard", "shared-decomp"}});
  EXPECT_EQ(r.verdict, Verdict::pass) << verdict_name(r.verdict) << ": " << (r.primary() ? r.primary()->detail : "");
}

// Node kwargs: attn_mask, dropout_p and is_causal may come as kwargs; any
// kwarg other than those, scale and enable_gqa raises.
TEST(SharedDecomp, KwargsAreCanonicalizedAndUnknownOnesRaise) {
  Case c = call(1, 1, 2, 2, 4);
  c.is_causal = true;
  Graph g = sdpa_entry_graph(c);
  Node& n = g.nodes[g.find("scaled_dot_product_attention")];
  n.args.resize(3);
  n.kwargs = {{"is_causal", true}, {"dropout_p", 0.0}, {"scale", 0.25}};
  const SdpaCall call = canonicalize_shared_call(n);
  EXPECT_TRUE(call.is_causal);
  EXPECT_EQ(call.scale, 0.25);
  n.kwargs.push_back({"zeta", true});
  n.kwargs.push_back({"alpha", 1.0});
  try {
    canonicalize_shared_call(n);
    ADD_FAILURE() << "not raised";
  } catch (const SharedDecompError& e) {
    EXPECT_STREQ(e.what(), "RuntimeError: Unsupported kwargs for scaled_dot_product_attention: alpha, zeta");
  }
  EXPECT_THROW(DecomposeSdpaPass(Policy::shared_decomp, std::nullopt).run(g, c.shape_env()), SharedDecompError);
}

// The guard of shared-decomp has one rule that always accepts; weaken and the
// emitter mutants are rejected with a named option where they mean nothing.
TEST(SharedDecomp, NoGuardAndOptionChecks) {
  Case c = call(2, 2, 3, 4, 4);
  c.is_causal = true;
  Pass::Result r = DecomposeSdpaPass(Policy::shared_decomp, std::nullopt).run(sdpa_entry_graph(c), c.shape_env());
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_TRUE(r.decisions[0].rewrite);
  EXPECT_EQ(r.graph.count(kSdpaOp), 0);
  EXPECT_THROW(registry().make("cortex-m", {{"guard", "shared-decomp"}, {"weaken", "no-mask"}}), InputError);
  EXPECT_THROW(registry().make("cortex-m", {{"mutant", "shared-drop-mask"}}), InputError);
  EXPECT_EQ(check(c, {{"guard", "shared-decomp"}}).verdict, Verdict::pass);
}

}  // namespace
}  // namespace sdpa::cortex_m
