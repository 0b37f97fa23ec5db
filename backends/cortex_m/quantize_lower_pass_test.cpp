// The quantizer and lowering on an eligible call: the lowered graph's ops and
// qparams, its exact meaning, the fold, the softmax check's quirk, and the
// CMSIS refusals as kernel errors.
#include "backends/cortex_m/quantize_lower_pass.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/common/sdpa_entry.h"
#include "backends/cortex_m/calibration.h"
#include "backends/cortex_m/cmsis/lowering_params.h"
#include "backends/cortex_m/cmsis_kernels.h"
#include "backends/cortex_m/cortex_m_ops.h"
#include "backends/cortex_m/decompose_sdpa_pass.h"
#include "backends/cortex_m/matmul_to_bmm_pass.h"
#include "backends/cortex_m/stage_reference.h"
#include "harness/check/target.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/graph_verify.h"

namespace sdpa::cortex_m {
namespace {

Case eligible(int64_t heads = 2) {
  Case c;
  c.batch = {SymExpr(2)};
  c.q_heads = c.kv_heads = heads;
  c.q_len = 3;
  c.kv_len = 5;
  c.head_dim = 8;
  c.value_dim = 4;
  c.data.seed = 11;
  return c;
}

std::map<std::string, Tensor> inputs(const Case& c) {
  CaseTensors t = make_case_tensors(c, {});
  std::map<std::string, Tensor> in{{"q", t.q}, {"k", t.k}, {"v", t.v}};
  if (t.mask) in["attn_mask"] = *t.mask;
  return in;
}

struct Lowered {
  Graph entry, graph;
};

Lowered lower(const Case& c, Policy policy, QuantizerConfig cfg = {}) {
  Lowered l;
  l.entry = sdpa_entry_graph(c);
  attach_example_inputs(l.entry, inputs(c));
  Graph g = DecomposeSdpaPass(policy, std::nullopt).run(l.entry, c.shape_env()).graph;
  g = MatmulToBmmPass().run(g, {}).graph;
  cfg.fold = policy == Policy::decompose_fold;
  l.graph = QuantizeLowerPass(cfg).run(g, {}).graph;
  return l;
}

const Node& first(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes)
    if (n.op == op) return n;
  throw std::runtime_error("no " + op);
}

// What running `g` raises: the KernelError's kind and text, or ran = true.
struct Raised {
  bool ran = true;
  KernelError::Kind kind = KernelError::Kind::recoverable;
  std::string what;
};

Raised run_raises(const Graph& g, const KernelSet& kernels, const std::map<std::string, Tensor>& in) {
  try {
    interpret(g, kernels, in, {});
  } catch (const KernelError& e) {
    return {false, e.kind, e.what()};
  }
  return {};
}

TEST(QuantizeLower, EligibleCallLowersToCortexMOps) {
  Lowered l = lower(eligible(), Policy::decompose);
  EXPECT_TRUE(verify_graph(l.graph).empty());
  const std::string text = print_graph(l.graph);
  EXPECT_EQ(l.graph.count(kBmmOp), 2) << text;
  EXPECT_EQ(l.graph.count(kMulOp), 1) << text;
  EXPECT_EQ(l.graph.count(kSoftmaxOp), 1) << text;
  EXPECT_EQ(l.graph.count(kQuantizeOp), 3) << text;  // q, kᵀ, v
  EXPECT_EQ(l.graph.count(kDequantizeOp), 1) << text;
  EXPECT_EQ(l.graph.count(kTransposeOp), 2) << text;
  EXPECT_EQ(l.graph.count("aten.bmm.default") + l.graph.count("aten._softmax.default"), 0) << text;
  // The softmax output is fixed at (1/256, -128).
  const Node& sm = first(l.graph, kSoftmaxOp);
  EXPECT_EQ(sm.outputs[0].qparams->scale, 1.0 / 256);
  EXPECT_EQ(sm.outputs[0].qparams->zero_point, -128);
  // Proportional qparams around the scale MUL.
  const Node& bmm = first(l.graph, kBmmOp);
  const Node& mul = first(l.graph, kMulOp);
  const double c = 1 / std::sqrt(8.0);
  EXPECT_NEAR(std::get<double>(*mul.kwarg("output_scale")) / (std::get<double>(*bmm.kwarg("output_scale")) * c), 1, 1e-6);
  EXPECT_EQ(std::get<int64_t>(mul.args[4]), std::get<int64_t>(bmm.args[4]));
  // The bmm's multiplier and shift are quantize_multiplier_aot(S_l·S_r/S_o).
  const cmsis::QuantMultiplier qm =
      cmsis::quantize_multiplier_aot(std::get<double>(*bmm.kwarg("lhs_scale")) * std::get<double>(*bmm.kwarg("rhs_scale")) /
                                     std::get<double>(*bmm.kwarg("output_scale")));
  EXPECT_EQ(std::get<int64_t>(bmm.args[5]), qm.multiplier);
  EXPECT_EQ(std::get<int64_t>(bmm.args[6]), qm.shift);
}

TEST(QuantizeLower, ExactMeaningOfTheLoweredGraphIsTheFloatSdpa) {
  for (Policy p : {Policy::decompose, Policy::decompose_fold}) {
    Case c = eligible();
    Lowered l = lower(c, p);
    auto in = inputs(c);
    const KernelSet exact = exact_cortex_m_kernels();
    Tensor want = interpret(l.entry, exact, in, {}).outputs[0], got = interpret(l.graph, exact, in, {}).outputs[0];
    for (int64_t i = 0; i < want.numel(); ++i) EXPECT_NEAR(got.data[i], want.data[i], 1e-12) << policy_name(p);
    // The int8 run is close (a few output steps).
    Tensor q = interpret(l.graph, cmsis_nn_kernels(), in, {}).outputs[0];
    for (int64_t i = 0; i < want.numel(); ++i) EXPECT_NEAR(q.data[i], want.data[i], 0.1) << policy_name(p);
  }
}

TEST(QuantizeLower, FoldRemovesTheMulOnlyForProportionalQparams) {
  Lowered l = lower(eligible(), Policy::decompose_fold);
  EXPECT_EQ(l.graph.count(kMulOp), 0) << print_graph(l.graph);
  const Node& bmm = first(l.graph, kBmmOp);
  const Node& sm = first(l.graph, kSoftmaxOp);
  EXPECT_NEAR(std::get<double>(*sm.kwarg("input_scale")) / (std::get<double>(*bmm.kwarg("output_scale")) / std::sqrt(8.0)),
              1, 1e-6);
  // With the mutant's observer, the qparams are not proportional: no fold.
  QuantizerConfig bad;
  bad.observer_before_mul = true;
  Lowered m = lower(eligible(), Policy::decompose_fold, bad);
  EXPECT_EQ(m.graph.count(kMulOp), 1);
  EXPECT_EQ(std::get<double>(*first(m.graph, kMulOp).kwarg("output_scale")),
            std::get<double>(*first(m.graph, kMulOp).kwarg("a_scale")));
  // A negative scale never folds.
  Case neg = eligible();
  neg.scale = -0.2;
  EXPECT_EQ(lower(neg, Policy::decompose_fold).graph.count(kMulOp), 1);
}

TEST(QuantizeLower, UpstreamSoftmaxCheckRejectsAChannelsLastScoreTensor) {
  Case one_head = eligible(1);  // scores [2, 1, 3, 5]: "channels-last"
  Lowered up = lower(one_head, Policy::decompose);
  EXPECT_EQ(up.graph.count(kSoftmaxOp), 0);
  EXPECT_EQ(up.graph.count("aten._softmax.default"), 1);
  QuantizerConfig last;
  last.upstream_softmax_check = false;
  EXPECT_EQ(lower(one_head, Policy::decompose, last).graph.count(kSoftmaxOp), 1);
  EXPECT_EQ(lower(eligible(2), Policy::decompose).graph.count(kSoftmaxOp), 1);
}

// CortexMAddMulCheck (§1.5, pattern_checkers.py, passes_utils.py): equal
// shapes, or a channel broadcast on a channels-last 4-D tensor. The rank-1
// full([1]) of ReplaceScalarWithTensorArgPass never passes; a rank-matched
// [1,1,1,1] buffer passes on a one-channel [B,1,T,U] (or [B,1,1,1]), not on
// [B,H,1,1] with H > 1, whose channel count differs from the buffer's.
TEST(QuantizeLower, AddMulCheckTakesEqualShapesOrAChannelBroadcast) {
  EXPECT_TRUE(add_mul_check_accepts({1, 2, 4, 4}, {1, 2, 4, 4}));
  EXPECT_FALSE(add_mul_check_accepts({1, 2, 4, 4}, {1}));
  EXPECT_FALSE(add_mul_check_accepts({1, 1, 4, 4}, {1}));
  EXPECT_FALSE(add_mul_check_accepts({2, 4, 4}, {1, 1, 1}));  // rank 3 is never channels-last
  EXPECT_TRUE(add_mul_check_accepts({2, 1, 4, 4}, {1, 1, 1, 1}));
  EXPECT_TRUE(add_mul_check_accepts({2, 1, 1, 1}, {1, 1, 1, 1}));
  EXPECT_FALSE(add_mul_check_accepts({1, 2, 1, 1}, {1, 1, 1, 1}));
  EXPECT_FALSE(add_mul_check_accepts({1, 2, 4, 4}, {1, 1, 1, 1}));  // not channels-last
  EXPECT_TRUE(add_mul_check_accepts({2, 4, 1, 1}, {1, 4, 1, 1}));   // a per-channel operand
}

// mul-check=upstream: the scale MUL reads full([1]) and is rejected, so it
// stays an fp32 aten.mul between cortex_m.dequantize_per_tensor and
// quantize_per_tensor, also on one head; the lowered graph still means the
// float SDPA, and the fold removes the fp32 island as it removes the int8 MUL.
TEST(QuantizeLower, UpstreamMulCheckLeavesAnFp32MulBetweenDequantizeAndQuantize) {
  QuantizerConfig up;
  up.mul_check = MulCheck::upstream;
  for (int64_t heads : {1, 2}) {
    Case c = eligible(heads);
    Lowered l = lower(c, Policy::decompose, up);
    const std::string text = print_graph(l.graph);
    EXPECT_EQ(l.graph.count(kMulOp), 0) << text;
    ASSERT_EQ(l.graph.count("aten.mul.Scalar"), 1) << text;
    const int mul = l.graph.find(first(l.graph, "aten.mul.Scalar").name);
    EXPECT_EQ(l.graph.nodes[std::get<ValueRef>(l.graph.nodes[mul].args[0]).node].op, kDequantizeOp) << text;
    EXPECT_EQ(l.graph.nodes[mul].outputs[0].dtype, DType::f32);
    if (heads == 2) {
      const std::vector<int> users = l.graph.users(mul);
      ASSERT_EQ(users.size(), 1u) << text;
      EXPECT_EQ(l.graph.nodes[users[0]].op, kQuantizeOp) << text;
      EXPECT_EQ(l.graph.count(kSoftmaxOp), 1) << text;
    }
    auto in = inputs(c);
    const KernelSet exact = exact_cortex_m_kernels();
    Tensor want = interpret(l.entry, exact, in, {}).outputs[0], got = interpret(l.graph, exact, in, {}).outputs[0];
    for (int64_t i = 0; i < want.numel(); ++i) EXPECT_NEAR(got.data[i], want.data[i], 1e-12) << heads;
  }
  up.fold = true;
  Lowered f = lower(eligible(), Policy::decompose_fold, up);
  EXPECT_EQ(f.graph.count(kMulOp) + f.graph.count("aten.mul.Scalar"), 0) << print_graph(f.graph);
}

// mul-check=rank-matched: upstream's DecomposeSDPAPass multiplies by a
// Python scalar, a (1,)*R buffer after ScalarsToAttributePass, which
// CortexMAddMulCheck takes as a channel broadcast on one head's 4-D scores
// (an int8 MUL the runtime can run) and rejects on two heads (fp32).
TEST(QuantizeLower, RankMatchedMulCheckQuantizesTheMulOnOneHeadOnly) {
  QuantizerConfig rm;
  rm.mul_check = MulCheck::rank_matched;
  for (int64_t heads : {1, 2}) {
    const Case c = eligible(heads);
    const Lowered l = lower(c, Policy::decompose, rm);
    const std::string text = print_graph(l.graph);
    EXPECT_EQ(l.graph.count(kMulOp), heads == 1 ? 1 : 0) << text;
    EXPECT_EQ(l.graph.count("aten.mul.Scalar"), heads == 1 ? 0 : 1) << text;
    if (heads == 1) EXPECT_EQ(l.graph.info(std::get<ValueRef>(first(l.graph, kMulOp).args.at(2))).shape, SymShape(4, SymExpr(1)));
    EXPECT_NO_THROW(interpret(l.graph, cmsis_nn_kernels(), inputs(c), {})) << text;
  }
}

// shared-decomp under int8 (§1.3 derived): the two score bmm quantized; the
// q·c and kᵀ·c MULs read float placeholders and _safe_softmax is not in
// SOFTMAX_OP_PATTERNS, so both stay fp32; the softmax sits between a
// dequantize and (through MatmulToBmm's reshape) a quantize. A causal or
// masked call adds its mask in fp32 too.
TEST(QuantizeLower, SharedDecompKeepsSafeSoftmaxAndScaleMulsFp32) {
  Case c = eligible(2);
  c.batch = {SymExpr(1)};
  c.q_len = c.kv_len = 4;
  c.head_dim = c.value_dim = 4;
  for (int form = 0; form < 3; ++form) {
    if (form == 1) c.is_causal = true;
    if (form == 2) {
      c.is_causal = false;
      c.mask = MaskSpec{DType::b8, {SymExpr(4), SymExpr(4)}, MaskPattern::random, 0.7};
    }
    Lowered l = lower(c, Policy::shared_decomp);
    const std::string text = print_graph(l.graph);
    EXPECT_TRUE(verify_graph(l.graph).empty()) << text;
    EXPECT_EQ(l.graph.count(kBmmOp), 2) << text;
    EXPECT_EQ(l.graph.count(kSoftmaxOp), 0) << text;
    EXPECT_EQ(l.graph.count(kMulOp), 0) << text;
    EXPECT_EQ(l.graph.count("aten.mul.Scalar"), 2) << text;
    ASSERT_EQ(l.graph.count("aten._safe_softmax.default"), 1) << text;
    int sm = l.graph.find(first(l.graph, "aten._safe_softmax.default").name);
    EXPECT_EQ(l.graph.nodes[sm].outputs[0].dtype, DType::f32);
    const Node* in = &l.graph.nodes[std::get<ValueRef>(l.graph.nodes[sm].args[0]).node];
    if (form > 0) {
      EXPECT_EQ(in->op, "aten.add.Tensor") << text;
      in = &l.graph.nodes[std::get<ValueRef>(in->args[0]).node];
    }
    EXPECT_EQ(in->op, kDequantizeOp) << text;
    int at = sm;
    while (l.graph.users(at).size() == 1 && l.graph.nodes[l.graph.users(at)[0]].op == "aten.reshape.default")
      at = l.graph.users(at)[0];
    ASSERT_EQ(l.graph.users(at).size(), 1u) << text;
    EXPECT_EQ(l.graph.nodes[l.graph.users(at)[0]].op, kQuantizeOp) << text;
    auto inputs_c = inputs(c);
    const KernelSet exact = exact_cortex_m_kernels();
    Tensor want = interpret(l.entry, exact, inputs_c, {}).outputs[0];
    Tensor got = interpret(l.graph, exact, inputs_c, {}).outputs[0];
    for (int64_t i = 0; i < want.numel(); ++i) EXPECT_NEAR(got.data[i], want.data[i], 1e-12) << form;
  }
}

// Scores that are exactly 0 (q ⟂ k) floor the bmm's output observer at eps,
// while the int8 codes of q and k do not cancel: S_l·S_r/S_o needs a large
// left shift and acc·2^shift leaves int32. overflow=undefined refuses it
// (naming the accumulator); overflow=wrap computes the wrapped value, which
// the stage reference (requantize_cmsis, Python integers) then contradicts.
TEST(QuantizeLower, AnEpsFlooredBmmOutputOverflowsTheLeftShift) {
  Case c;
  c.head_dim = c.value_dim = 2;
  Graph entry = sdpa_entry_graph(c);
  Tensor q(DType::f32, {1, 1, 2}), k(DType::f32, {1, 1, 2}), v(DType::f32, {1, 1, 2});
  q.data = {1000, 1000};
  k.data = {1000, -1000};
  v.data = {1, 2};
  const std::map<std::string, Tensor> in{{"q", q}, {"k", k}, {"v", v}};
  attach_example_inputs(entry, in);
  Graph g = DecomposeSdpaPass(Policy::decompose, std::nullopt).run(entry, c.shape_env()).graph;
  g = MatmulToBmmPass().run(g, {}).graph;
  const Graph l = QuantizeLowerPass({}).run(g, {}).graph;
  const Node& bmm = first(l, kBmmOp);
  EXPECT_EQ(std::get<double>(*bmm.kwarg("output_scale")), static_cast<double>(std::numeric_limits<float>::epsilon()));
  EXPECT_GT(std::get<int64_t>(bmm.args[6]), 20) << print_graph(l);
  const Raised undefined = run_raises(l, cmsis_nn_kernels(), in);
  EXPECT_FALSE(undefined.ran);
  EXPECT_EQ(undefined.kind, KernelError::Kind::recoverable);
  EXPECT_NE(undefined.what.find("undefined behaviour in arm_batch_matmul_s8: acc[0,0,0]·2^shift"), std::string::npos)
      << undefined.what;
  const KernelSet wrap = cmsis_nn_kernels(cmsis::Rounding::double_rounding, DType::f32, cmsis::Overflow::wrap);
  const Execution run = interpret(l, wrap, in, {}, /*keep_values=*/true);
  const std::optional<StageBreach> breach = first_stage_out_of_bound(l, run);
  ASSERT_TRUE(breach.has_value());
  EXPECT_NE(breach->detail.find("stage %bmm"), std::string::npos) << breach->detail;
  EXPECT_TRUE(breach->in_kernel) << breach->detail;
  std::printf("%s\n", breach->detail.c_str());
}

TEST(QuantizeLower, MinMaxObserver) {
  Tensor t(DType::f32, {4});
  t.data = {-1.0, 0.5, 2.0, 3.0};
  QParams q = minmax_qparams(t);
  EXPECT_DOUBLE_EQ(q.scale, 4.0 / 255);
  EXPECT_EQ(q.zero_point, -128 - static_cast<int64_t>(std::nearbyint(-1.0 / (4.0 / 255))));
  t.data = {0, 0, 0, 0};
  EXPECT_EQ(minmax_qparams(t).scale, static_cast<double>(std::numeric_limits<float>::epsilon()));
}

// CMSIS refusals: the bmm's out-of-range shift is undefined behaviour
// (recoverable), the softmax's aborts (fatal), a softmax row of 512 equal
// values is undefined behaviour; each names kernel and operand.
TEST(QuantizeLower, CmsisRefusalsAreKernelErrorsNamingKernelAndOperand) {
  Graph g;
  ValueRef a = g.placeholder("a", {DType::i8, {1, 1, 2}, QParams{}});
  ValueRef b = g.placeholder("b", {DType::i8, {1, 1, 2}, QParams{}});
  g.outputs = {g.call(kBmmOp, {a, int64_t{0}, b, int64_t{0}, int64_t{0}, int64_t{1 << 30}, int64_t{40}},
                      {{"lhs_scale", 1.0}, {"rhs_scale", 1.0}, {"output_scale", 1.0}}, {{DType::i8, {1, 1, 1}, QParams{}}})};
  Tensor x(DType::i8, {1, 1, 2});
  x.qparams = QParams{};
  // op_quantized_batch_matmul validates no quant param: shift 40 reaches the
  // requantization, a C shift by 32 or more.
  const Raised bmm = run_raises(g, cmsis_nn_kernels(), {{"a", x}, {"b", x}});
  EXPECT_FALSE(bmm.ran);
  EXPECT_EQ(bmm.kind, KernelError::Kind::recoverable);
  EXPECT_NE(bmm.what.find("undefined behaviour in arm_batch_matmul_s8: shift: 40 is outside [-31, 31]"),
            std::string::npos)
      << bmm.what;
  // op_softmax.cpp validates its shift (an abort), then the output zero point
  // (a recoverable failure).
  auto softmax = [](int64_t out_zp, int64_t shift) {
    Graph s;
    ValueRef r = s.placeholder("x", {DType::i8, {1, 3}, QParams{}});
    s.outputs = {s.call(kSoftmaxOp, {r, int64_t{-1}, int64_t{0}, out_zp, int64_t{1 << 30}, shift, int64_t{-248}},
                        {{"input_scale", 0.1}}, {{DType::i8, {1, 3}, QParams{1.0 / 256, -128}}})};
    return run_raises(s, cmsis_nn_kernels(), {{"x", Tensor(DType::i8, {1, 3}, 3.0)}});
  };
  EXPECT_TRUE(softmax(-128, 5).ran);
  const Raised zp = softmax(-127, 5);
  EXPECT_FALSE(zp.ran);
  EXPECT_EQ(zp.kind, KernelError::Kind::recoverable);
  EXPECT_NE(zp.what.find("softmax_out: expected output zero_point=-128 (got zero_point=-127)"), std::string::npos)
      << zp.what;
  const Raised shift = softmax(-127, 40);
  EXPECT_FALSE(shift.ran);
  EXPECT_EQ(shift.kind, KernelError::Kind::fatal);
  EXPECT_NE(shift.what.find("validate_single_quant_params: shift: softmax input shift must be in range [-31, 31] [Value: 40]"),
            std::string::npos)
      << shift.what;
  Graph s;
  ValueRef r = s.placeholder("x", {DType::i8, {1, 512}, QParams{}});
  const cmsis::SoftmaxParams p = cmsis::softmax_params(0.1);
  s.outputs = {s.call(kSoftmaxOp, {r, int64_t{-1}, int64_t{0}, int64_t{-128}, int64_t{p.mult}, int64_t{p.shift}, p.diff_min},
                      {{"input_scale", 0.1}}, {{DType::i8, {1, 512}, QParams{1.0 / 256, -128}}})};
  const Raised uniform = run_raises(s, cmsis_nn_kernels(), {{"x", Tensor(DType::i8, {1, 512}, 3.0)}});
  EXPECT_FALSE(uniform.ran);
  EXPECT_EQ(uniform.kind, KernelError::Kind::recoverable);
  EXPECT_NE(uniform.what.find("undefined behaviour in arm_softmax_s8: bits_over_unit"), std::string::npos)
      << uniform.what;
}

// op_quantized_mul (cortex_m_ops_common.h): equal sizes, or a channel
// broadcast (both 4-D, equal size(1), one operand channels-only), where the
// smaller operand and its zero point go second and repeat every size(1)
// elements; any other pair fails ET_CHECK_MSG, a fatal error.
Graph mul_graph(const Shape& a, const Shape& b, const Shape& out, int64_t za, int64_t zb) {
  Graph g;
  auto sym = [](const Shape& s) {
    SymShape r;
    for (int64_t d : s) r.push_back(SymExpr(d));
    return r;
  };
  ValueRef x = g.placeholder("a", {DType::i8, sym(a), QParams{}});
  ValueRef y = g.placeholder("b", {DType::i8, sym(b), QParams{}});
  g.outputs = {g.call(kMulOp, {x, za, y, zb, int64_t{0}, int64_t{1 << 30}, int64_t{0}},
                      {{"a_scale", 1.0}, {"b_scale", 1.0}, {"output_scale", 1.0}}, {{DType::i8, sym(out), QParams{}}})};
  return g;
}

Tensor codes_of(const Shape& s, int first) {
  Tensor t(DType::i8, s);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = first + static_cast<int>(i);
  t.qparams = QParams{};
  return t;
}

TEST(QuantizeLower, QuantizedMulTakesEqualSizesOrAChannelBroadcastAndAbortsOtherwise) {
  // Multiplier 2^30, shift 0: (a - za)(b - zb) / 2, a tie rounded up (the doubling high multiply).
  auto product = [](double a, double za, double b, double zb) { return std::floor((a - za) * (b - zb) / 2 + 0.5); };
  {  // A [1, 1, 1, 1] code on a single-head score tensor: every element times it.
    const Graph g = mul_graph({2, 1, 2, 3}, {1, 1, 1, 1}, {2, 1, 2, 3}, 1, -2);
    const Tensor a = codes_of({2, 1, 2, 3}, -6), b = codes_of({1, 1, 1, 1}, 5);
    const Tensor r = interpret(g, cmsis_nn_kernels(), {{"a", a}, {"b", b}}, {}).outputs[0];
    for (size_t i = 0; i < r.data.size(); ++i) EXPECT_EQ(r.data[i], product(a.data[i], 1, 5, -2)) << i;
  }
  {  // The smaller operand first: swapped with its zero point, reread every size(1) = 2
     // elements of the data, which channels-last order makes per channel (@25436432
     // computes this; later versions first check that layout, which this model has not).
    const Graph g = mul_graph({1, 2, 1, 1}, {1, 2, 2, 2}, {1, 2, 2, 2}, 3, -1);
    const Tensor a = codes_of({1, 2, 1, 1}, 7), b = codes_of({1, 2, 2, 2}, -4);
    const Tensor r = interpret(g, cmsis_nn_kernels(), {{"a", a}, {"b", b}}, {}).outputs[0];
    for (size_t i = 0; i < r.data.size(); ++i) EXPECT_EQ(r.data[i], product(b.data[i], -1, a.data[i % 2], 3)) << i;
  }
  for (const auto& [a, b] : std::vector<std::pair<Shape, Shape>>{
           {{1, 2, 2, 3}, {1, 1, 1, 1}}, {{2, 2, 3}, {1, 1, 1}}, {{2, 3}, {1}}, {{1, 1, 1, 1, 2}, {1, 1, 1, 1, 1}}}) {
    const Raised r =
        run_raises(mul_graph(a, b, a, 0, 0), cmsis_nn_kernels(), {{"a", codes_of(a, 0)}, {"b", codes_of(b, 1)}});
    EXPECT_FALSE(r.ran) << shape_str(a) << " * " << shape_str(b);
    EXPECT_EQ(r.kind, KernelError::Kind::fatal);
    EXPECT_NE(r.what.find("Input1 and Input2 must have the same sizes (" + shape_str(a)), std::string::npos) << r.what;
  }
}

// The scale MUL's int8 constant under annotate: ReplaceScalarWithTensorArgPass's
// full((1,)) materialized at the MUL's shape (MaterializeMulBroadcastPass).
// A lowering that leaves it [1, 1, 1, 1] runs on one head (a channel
// broadcast) and aborts the runtime on two.
TEST(QuantizeLower, TheScaleConstantIsMaterializedAtTheMulsShape) {
  auto constant_shape = [](const Graph& g) {
    const Node& mul = first(g, kMulOp);
    return g.info(std::get<ValueRef>(mul.args.at(2))).shape;
  };
  for (int64_t heads : {1, 2}) {
    const Case c = eligible(heads);
    const Lowered l = lower(c, Policy::decompose);
    EXPECT_EQ(constant_shape(l.graph), (SymShape{SymExpr(2), SymExpr(heads), SymExpr(3), SymExpr(5)})) << heads;
    EXPECT_NO_THROW(interpret(l.graph, cmsis_nn_kernels(), inputs(c), {}));
    QuantizerConfig unmaterialized;
    unmaterialized.materialize_mul_broadcast = false;
    const Lowered u = lower(c, Policy::decompose, unmaterialized);
    EXPECT_EQ(constant_shape(u.graph), SymShape(4, SymExpr(1)));
    if (heads == 1) {
      EXPECT_NO_THROW(interpret(u.graph, cmsis_nn_kernels(), inputs(c), {}));
      continue;
    }
    const Raised r = run_raises(u.graph, cmsis_nn_kernels(), inputs(c));
    EXPECT_FALSE(r.ran);
    EXPECT_EQ(r.kind, KernelError::Kind::fatal);
    EXPECT_NE(r.what.find("Input1 and Input2 must have the same sizes ([2, 2, 3, 5] and [1, 1, 1, 1])"), std::string::npos)
        << r.what;
  }
}

// The scale constant is observed as an activation (CortexMQuantizer's
// annotate_match gives a MUL input that is no parameter the activation
// qspec): range [min(c, 0), max(c, 0)] over 255 codes, floored at f32 eps,
// zero point -128 for c > 0 (127 for c < 0), so c is code 127 (-128). A
// scale below 255·eps floors: 1e-8 becomes code -128 = the zero point, 0.
// MinMax and histogram observers agree on a one-value tensor.
TEST(QuantizeLower, TheScaleConstantIsObservedAsAnActivation) {
  const double eps = std::ldexp(1.0, -23);
  struct Want {
    double c, scale;
    int64_t zero_point;
    double code;
  };
  for (const Want& w : {Want{0.125, 0.125 / 255, -128, 127}, Want{-0.5, 0.5 / 255, 127, -128},
                        Want{1e-8, eps, -128, -128}, Want{1e-5, eps, -128, -128 + std::nearbyint(1e-5 / eps)}})
    for (Observer o : {Observer::minmax, Observer::histogram}) {
      Case c = eligible(1);
      c.scale = w.c;
      QuantizerConfig cfg;
      cfg.observer = o;
      const Graph g = lower(c, Policy::decompose, cfg).graph;
      const Node& mul = first(g, kMulOp);
      const ValueRef constant = std::get<ValueRef>(mul.args.at(2));
      const QParams& q = *g.info(constant).qparams;
      EXPECT_NEAR(q.scale, w.scale, 1e-6 * w.scale) << w.c;
      EXPECT_EQ(q.zero_point, w.zero_point) << w.c;
      EXPECT_EQ(std::get<int64_t>(mul.args.at(3)), w.zero_point) << w.c;
      const Tensor& codes = g.constants.at(g.nodes.at(constant.node).name);
      for (double v : codes.data) EXPECT_EQ(v, w.code) << w.c;
    }
}

// An int8 operand holds int8 codes: a value out of range or between two
// codes is refused, naming the element; the codes at both ends pass.
TEST(QuantizeLower, CmsisKernelsRefuseAnInt8OperandThatHoldsNoCode) {
  Graph s;
  ValueRef r = s.placeholder("x", {DType::i8, {1, 3}, QParams{}});
  const cmsis::SoftmaxParams p = cmsis::softmax_params(0.1);
  s.outputs = {s.call(kSoftmaxOp, {r, int64_t{-1}, int64_t{0}, int64_t{-128}, int64_t{p.mult}, int64_t{p.shift}, p.diff_min},
                      {{"input_scale", 0.1}}, {{DType::i8, {1, 3}, QParams{1.0 / 256, -128}}})};
  Tensor row(DType::i8, {1, 3});
  row.data = {-128, 0, 127};
  EXPECT_NO_THROW(interpret(s, cmsis_nn_kernels(), {{"x", row}}, {}));
  for (double bad : {2.5, 128.0, -129.0, -0.5, std::nan("")}) {
    row.data = {-128, bad, 127};
    try {
      interpret(s, cmsis_nn_kernels(), {{"x", row}}, {});
      ADD_FAILURE() << bad << " not refused";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("input[1] = "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("is not an int8"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sdpa::cortex_m
