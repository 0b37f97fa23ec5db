// The stage reference: requantize_cmsis's golden values (§2.1, §5.5), its
// agreement with the arm_nn_requantize model and its disagreement with single
// rounding; a lowered graph on cmsis-nn holds every stage bound.
#include "backends/cortex_m/stage_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backends/common/sdpa_entry.h"
#include "backends/cortex_m/calibration.h"
#include "backends/cortex_m/cmsis/quantize.h"
#include "backends/cortex_m/cmsis/requantize.h"
#include "backends/cortex_m/cmsis_kernels.h"
#include "backends/cortex_m/cortex_m_invariants.h"
#include "backends/cortex_m/cortex_m_ops.h"
#include "backends/cortex_m/decompose_sdpa_pass.h"
#include "backends/cortex_m/matmul_to_bmm_pass.h"
#include "backends/cortex_m/quantize_lower_pass.h"

namespace sdpa::cortex_m {
namespace {

TEST(StageReference, RequantizeCmsisGoldenValues) {
  const std::vector<int64_t> in{-5, -3, -1, 1, 3, 5}, want{-2, -1, 0, 1, 2, 3};
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(requantize_cmsis(in[i], 1 << 30, 0), want[i]) << in[i];
  EXPECT_EQ(requantize_cmsis(2, 1 << 30, -1), 1);
  EXPECT_EQ(requantize_cmsis(-2, 1 << 30, -1), -1);
  // Single rounding rounds -0.5 up to 0: the one difference the mutant shows.
  EXPECT_EQ(cmsis::requantize_in("k", "v", -2, 1 << 30, -1, cmsis::Rounding::single_rounding), 0);
}

TEST(StageReference, RequantizeCmsisMirrorsTheKernelModel) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int32_t> value(-100000, 100000), mult(1 << 30, 2147483647), shift(-20, 3);
  for (int i = 0; i < 20000; ++i) {
    const int32_t v = value(rng), m = mult(rng), s = shift(rng);
    ASSERT_EQ(requantize_cmsis(v, m, s), cmsis::requantize(v, m, s)) << v << " " << m << " " << s;
  }
}

Graph lowered(const Case& c, const std::map<std::string, Tensor>& in) {
  Graph g = sdpa_entry_graph(c);
  attach_example_inputs(g, in);
  g = DecomposeSdpaPass(Policy::decompose, std::nullopt).run(g, c.shape_env()).graph;
  g = MatmulToBmmPass().run(g, {}).graph;
  return QuantizeLowerPass({}).run(g, {}).graph;
}

TEST(StageReference, DoubleRoundingHoldsAndSingleRoundingIsNamed) {
  bool caught = false;
  for (uint64_t seed = 1; seed < 40 && !caught; ++seed) {
    Case c;
    c.batch = {SymExpr(2)};
    c.q_heads = c.kv_heads = 2;
    c.q_len = 4;
    c.kv_len = 6;
    c.head_dim = c.value_dim = 8;
    c.data.seed = seed;
    CaseTensors t = make_case_tensors(c, {});
    std::map<std::string, Tensor> in{{"q", t.q}, {"k", t.k}, {"v", t.v}};
    Graph g = lowered(c, in);
    Execution good = interpret(g, cmsis_nn_kernels(), in, {}, true);
    EXPECT_EQ(first_stage_out_of_bound(g, good), std::nullopt) << seed;
    Execution bad = interpret(g, cmsis_nn_kernels(cmsis::Rounding::single_rounding), in, {}, true);
    if (auto breach = first_stage_out_of_bound(g, bad)) {
      caught = true;
      EXPECT_NE(breach->detail.find("requantize_cmsis"), std::string::npos) << breach->detail;
      EXPECT_EQ(breach->detail.rfind("stage %", 0), 0u) << breach->detail;
      EXPECT_TRUE(breach->in_kernel) << breach->detail;
    }
  }
  EXPECT_TRUE(caught);
}

// A multiplier the lowering got wrong, which the kernel follows: the
// kernel agrees with its own arguments (the AOT reference), their codes
// leave the twin, and the breach is the lowering's, a structural violation
// of the invariants; a kernel slip beside it is reported too, as the
// kernel's, and hides nothing.
TEST(StageReference, AMultiplierTheKernelFollowsIsTheLoweringsBreach) {
  Case c;
  c.batch = {SymExpr(1)};
  c.q_len = 4;
  c.kv_len = 6;
  c.head_dim = c.value_dim = 8;
  c.data.seed = 3;
  CaseTensors t = make_case_tensors(c, {});
  std::map<std::string, Tensor> in{{"q", t.q}, {"k", t.k}, {"v", t.v}};
  Graph g = lowered(c, in);
  int bmm = -1;
  for (int i = 0; i < static_cast<int>(g.nodes.size()) && bmm < 0; ++i)
    if (g.nodes[i].op == kBmmOp) bmm = i;
  ASSERT_GE(bmm, 0);
  ASSERT_EQ(first_stage_out_of_bound(g, interpret(g, cmsis_nn_kernels(), in, {}, true)), std::nullopt);
  int64_t& m = std::get<int64_t>(g.nodes[bmm].args[5]);
  m = m / 4 * 3;  // three quarters of the scale ratio
  const std::string node = "%" + g.nodes[bmm].name + " (" + kBmmOp + ")";
  Execution run = interpret(g, cmsis_nn_kernels(), in, {}, true);
  StageBreaches b = stage_breaches(g, run);
  EXPECT_FALSE(b.kernel.has_value()) << b.kernel->detail;
  ASSERT_TRUE(b.lowering.has_value());
  EXPECT_FALSE(b.lowering->in_kernel);
  EXPECT_EQ(b.lowering->node, node);
  EXPECT_NE(b.lowering->detail.find("the lowering's multiplier " + std::to_string(m)), std::string::npos)
      << b.lowering->detail;
  // Through the invariants: a structural violation, no kernel breach.
  Graph entry = sdpa_entry_graph(c);
  attach_example_inputs(entry, in);
  const DecomposeSdpaPass pass(Policy::decompose, std::nullopt);
  const KernelSet kernels = cmsis_nn_kernels();
  Violations v = cortex_m_invariants({pass, Policy::decompose, true, kernels, in}, c, entry, g);
  EXPECT_TRUE(v.kernel.empty());
  ASSERT_FALSE(v.structural.empty());
  EXPECT_NE(v.structural.back().find("the lowering's multiplier"), std::string::npos) << v.structural.back();
  // A kernel slip in the same stage: both are named.
  double& code = run.values[bmm][0].data[0];
  code += code < 127 ? 1 : -1;
  b = stage_breaches(g, run);
  ASSERT_TRUE(b.kernel.has_value());
  ASSERT_TRUE(b.lowering.has_value());
  EXPECT_EQ(b.kernel->node, node);
  EXPECT_NE(b.kernel->detail.find("requantize_cmsis gives"), std::string::npos) << b.kernel->detail;
  EXPECT_NE(b.lowering->detail.find("the lowering's multiplier"), std::string::npos) << b.lowering->detail;
}

// The softmax stage holds each output to 2 LSB of round(256·softmax) - 128
// in long double: rows of int8 codes (their exps shared across rows) and a
// row of values that are not codes pass at the twin and fail 3 LSB off it.
TEST(StageReference, SoftmaxStageHoldsOutputsToTheirFakeQuantizedTwin) {
  const double scale = 0.5;
  const std::vector<double> in = {0, -1, -2, -3, 10, 9, 8, 7, 1.5, -2.25, 0.5, 3};
  const int64_t rows = 3, row = 4;
  Tensor x(DType::i8, {rows, row}), twin(DType::i8, {rows, row});
  x.data = in;
  for (int64_t r = 0; r < rows; ++r) {
    long double mx = *std::max_element(in.begin() + r * row, in.begin() + (r + 1) * row), total = 0;
    for (int64_t j = 0; j < row; ++j) total += std::exp((in[r * row + j] - mx) * static_cast<long double>(scale));
    for (int64_t j = 0; j < row; ++j) {
      const long double p = std::exp((in[r * row + j] - mx) * static_cast<long double>(scale)) / total;
      twin.data[r * row + j] = static_cast<double>(std::clamp<long double>(std::nearbyint(256 * p) - 128, -128, 127));
    }
  }
  const SymShape s{SymExpr(rows), SymExpr(row)};
  Graph g;
  ValueRef xr = g.placeholder("x", {DType::i8, s, QParams{}});
  g.outputs = {g.call(kSoftmaxOp, {xr}, {{"input_scale", scale}}, {{DType::i8, s, QParams{}}}, "sm")};
  Execution run;
  run.values = {{x}, {twin}};
  EXPECT_EQ(first_stage_out_of_bound(g, run), std::nullopt);
  for (int64_t at : {int64_t{1}, int64_t{9}}) {
    Execution off = run;
    off.values[1][0].data[static_cast<size_t>(at)] += 3;
    const std::optional<StageBreach> breach = first_stage_out_of_bound(g, off);
    ASSERT_TRUE(breach.has_value()) << at;
    EXPECT_NE(breach->detail.find("stage %sm"), std::string::npos) << breach->detail;
    EXPECT_NE(breach->detail.find("fake-quantized twin"), std::string::npos) << breach->detail;
    EXPECT_EQ(breach->node, "%sm (" + std::string(kSoftmaxOp) + ")");
    EXPECT_TRUE(breach->in_kernel);  // not lowered: no multiplier of the lowering's to blame
  }
}

// A softmax stage whose rows hold no element checks nothing and returns: a
// row width of 0 must not step through the tensor by 0 forever.
TEST(StageReference, SoftmaxStageOverEmptyRowsReturns) {
  Graph g;
  const SymShape s{SymExpr(2), SymExpr(0)};
  ValueRef x = g.placeholder("x", {DType::i8, s, QParams{}});
  g.outputs = {g.call(kSoftmaxOp, {x}, {{"input_scale", 0.1}}, {{DType::i8, s, QParams{}}})};
  Execution run;
  run.values = {{Tensor(DType::i8, {2, 0})}, {Tensor(DType::i8, {2, 0})}};
  EXPECT_EQ(first_stage_out_of_bound(g, run), std::nullopt);
}

// quantize_per_tensor's codes are correct roundings of zp + x / S (either
// side of a tie), clamped; dequantize_per_tensor gives (q - zp)·S. A code
// one off, or a dequantized value off by more than float's rounding, is named.
TEST(StageReference, QuantizeAndDequantizeStagesHoldTheirFormulas) {
  const double scale = 0.25;
  const int64_t zp = 3;
  Tensor x(DType::f32, {6}), q(DType::i8, {6}), back(DType::f32, {6});
  x.data = {0.0, 0.3, -1.125, 0.375, 100.0, -2.0};  // -1.125 / 0.25 = -4.5: a tie; 100 clamps
  q.data = {3, 4, -2, 5, 127, -5};                   // -4.5 + 3 = -1.5: -2 (to even); -1 would pass too
  for (int i = 0; i < 6; ++i) back.data[i] = (q.data[i] - zp) * scale;
  const SymShape s{SymExpr(6)};
  Graph g;
  ValueRef xr = g.placeholder("x", {DType::f32, s});
  ValueRef qr = g.call(kQuantizeOp, {xr, scale, zp, int64_t{-128}, int64_t{127}, DType::i8}, {},
                       {{DType::i8, s, QParams{}}}, "q");
  g.outputs = {g.call(kDequantizeOp, {qr, scale, zp, int64_t{-128}, int64_t{127}, DType::i8}, {}, {{DType::f32, s}},
                      "dq")};
  Execution run;
  run.values = {{x}, {q}, {back}};
  EXPECT_EQ(first_stage_out_of_bound(g, run), std::nullopt);
  Execution tie = run;
  tie.values[1][0].data[2] = -1;  // the other side of the tie
  tie.values[2][0].data[2] = (-1 - zp) * scale;
  EXPECT_EQ(first_stage_out_of_bound(g, tie), std::nullopt);
  Execution truncated = run;
  truncated.values[1][0].data[1] = 3;  // 0.3 / 0.25 = 1.2, + 3: 4
  truncated.values[2][0].data[1] = 0;
  const auto q_breach = first_stage_out_of_bound(g, truncated);
  ASSERT_TRUE(q_breach.has_value());
  EXPECT_NE(q_breach->detail.find("stage %q "), std::string::npos) << q_breach->detail;
  EXPECT_TRUE(q_breach->in_kernel);
  Execution off = run;
  off.values[2][0].data[3] += 1e-3;
  const auto dq_breach = first_stage_out_of_bound(g, off);
  ASSERT_TRUE(dq_breach.has_value());
  EXPECT_NE(dq_breach->detail.find("stage %dq "), std::string::npos) << dq_breach->detail;
  EXPECT_TRUE(dq_breach->in_kernel);
}

// Helium keeps the low 16 bits of zp + round(x / S): from 2^15 - 1/2 on the
// device wraps where the scalar path clamps, and the stage does not hold it.
TEST(StageReference, TheQuantizeStageTakesHeliumsBlocksAsTheDeviceComputesThem) {
  const double scale = 1.0;
  const int64_t zp = 100;
  std::vector<float> xs(16);
  for (int i = 0; i < 16; ++i) xs[i] = static_cast<float>(i * 2047.5 - 16000.0);
  xs[3] = 32700.0f;  // 32800 past zp: Helium's low 16 bits wrap it to -128
  const SymShape s{SymExpr(16)};
  Graph g;
  ValueRef xr = g.placeholder("x", {DType::f32, s});
  g.outputs = {g.call(kQuantizeOp, {xr, scale, zp, int64_t{-128}, int64_t{127}, DType::i8}, {},
                      {{DType::i8, s, QParams{}}}, "q")};
  Tensor x(DType::f32, {16});
  x.data.assign(xs.begin(), xs.end());
  for (cmsis::Isa isa : {cmsis::Isa::scalar, cmsis::Isa::helium}) {
    const std::vector<int8_t> q = cmsis::quantize_per_tensor(xs, scale, static_cast<int32_t>(zp), -128, 127, isa);
    Tensor out(DType::i8, {16});
    out.data.assign(q.begin(), q.end());
    Execution run;
    run.values = {{x}, {out}};
    EXPECT_EQ(first_stage_out_of_bound(g, run), std::nullopt) << (isa == cmsis::Isa::helium ? "helium" : "scalar");
  }
  EXPECT_EQ(cmsis::quantize_per_tensor(xs, scale, static_cast<int32_t>(zp), -128, 127, cmsis::Isa::helium)[3], -128);
}

}  // namespace
}  // namespace sdpa::cortex_m
