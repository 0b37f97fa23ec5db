// The numerics cmsis-nn declares, read from lowered graphs: every grid in
// units of the call's tensors, whatever sits between the tensor and its
// quantize (a transpose, shared-decomp's sqrt(scale)) or between the first
// bmm and the softmax (the scale's MUL). MinMax observed the calibration
// data, so each grid holds those values within half a step: a grid read in
// the wrong units does not.
#include "backends/cortex_m/cmsis_numerics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "backends/common/sdpa_entry.h"
#include "backends/cortex_m/calibration.h"
#include "backends/cortex_m/cortex_m_ops.h"
#include "backends/target_fixture.h"
#include "backends/cortex_m/decompose_sdpa_pass.h"
#include "backends/cortex_m/matmul_to_bmm_pass.h"
#include "backends/cortex_m/quantize_lower_pass.h"
#include "harness/case/tensor_data.h"

namespace sdpa::cortex_m {
namespace {

Case call(double scale) {
  Case c;
  c.batch = {SymExpr(2)};
  c.q_heads = c.kv_heads = 2;
  c.q_len = 5;
  c.kv_len = 7;
  c.head_dim = c.value_dim = 4;
  c.scale = scale;
  c.data.seed = 11;
  return c;
}

Graph lowered(const Case& c, const CaseTensors& t, Policy policy, QuantizerConfig config = {}) {
  std::map<std::string, Tensor> in{{"q", t.q}, {"k", t.k}, {"v", t.v}};
  if (t.mask) in.emplace("attn_mask", *t.mask);
  Graph g = sdpa_entry_graph(c);
  attach_example_inputs(g, in);
  g = DecomposeSdpaPass(policy, std::nullopt).run(g, c.shape_env()).graph;
  g = MatmulToBmmPass().run(g, {}).graph;
  return QuantizeLowerPass(config).run(g, {}).graph;
}

double min_of(const std::vector<double>& x) { return *std::min_element(x.begin(), x.end()); }
double max_of(const std::vector<double>& x) { return *std::max_element(x.begin(), x.end()); }

// The grid holds [lo, hi] of the data within half a step (MinMax's rounded
// zero point moves its range by up to that).
void expect_holds(const Int8Grid& g, double lo, double hi, const char* what) {
  ASSERT_GT(g.step, 0) << what;
  EXPECT_LE(g.lo, lo + g.step / 2) << what;
  EXPECT_GE(g.hi, hi - g.step / 2) << what;
  EXPECT_LE(g.hi - g.lo, (hi - lo) * 1.01 + g.step) << what;  // and no wider: in the tensor's units
}

// The scores of the call (bhsd, equal heads), scale applied, over every
// row and key.
std::vector<double> scores(const Case& c, const CaseTensors& t) {
  const int64_t Lq = c.q_len.constant(), Lkv = c.kv_len.constant(), E = c.head_dim;
  const int64_t blocks = t.q.numel() / (Lq * E);
  std::vector<double> all;
  for (int64_t bh = 0; bh < blocks; ++bh)
    for (int64_t i = 0; i < Lq; ++i)
      for (int64_t j = 0; j < Lkv; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < E; ++e) dot += t.q.data[(bh * Lq + i) * E + e] * t.k.data[(bh * Lkv + j) * E + e];
        all.push_back(*c.scale * dot);
      }
  return all;
}

// Behind the scale's MUL, or where the fold has the softmax read the bmm's
// codes with a scale of its own.
TEST(CmsisNumerics, TheDecompositionsGridsAreInTheCallsUnitsTheScoresScaledBehindTheMul) {
  QuantizerConfig fold;
  fold.fold = true;
  const std::pair<double, bool> calls[] = {{0.25, false}, {3000.0, false}, {-2.0, false}, {0.25, true}, {3000.0, true}};
  for (const auto& [scale, folded] : calls) {
    Case c = call(scale);
    CaseTensors t = make_case_tensors(c, {});
    KernelNumerics n = cmsis_numerics(
        c, folded ? lowered(c, t, Policy::decompose_fold, fold) : lowered(c, t, Policy::decompose), false);
    ASSERT_EQ(n.kind, KernelNumerics::Kind::quantized);
    const QuantizedNumerics& q = n.quant;
    expect_holds(q.q, std::fmin(0.0, min_of(t.q.data)), std::fmax(0.0, max_of(t.q.data)), "q");
    expect_holds(q.k, std::fmin(0.0, min_of(t.k.data)), std::fmax(0.0, max_of(t.k.data)), "k");
    expect_holds(q.v, std::fmin(0.0, min_of(t.v.data)), std::fmax(0.0, max_of(t.v.data)), "v");
    const std::vector<double> s = scores(c, t);
    expect_holds(q.scores, std::fmin(0.0, min_of(s)), std::fmax(0.0, max_of(s)), "scores");
    EXPECT_FALSE(q.ranges_clip);
  }
}

TEST(CmsisNumerics, SharedDecompsQAndKGridsAreDividedBySqrtScale) {
  Case c = call(9.0);  // q and k each multiplied by 3 before they are quantized
  CaseTensors t = make_case_tensors(c, {});
  const QuantizedNumerics q = cmsis_numerics(c, lowered(c, t, Policy::shared_decomp), false).quant;
  expect_holds(q.q, std::fmin(0.0, min_of(t.q.data)), std::fmax(0.0, max_of(t.q.data)), "q");
  expect_holds(q.k, std::fmin(0.0, min_of(t.k.data)), std::fmax(0.0, max_of(t.k.data)), "k");
}

// shared-decomp adds the mask in f32 between the bmm's dequantize and the
// softmax: the bmm's grid holds the scores without the mask, and no grid
// holds them with it. Unmasked, the same grid holds the scores.
TEST(CmsisNumerics, SharedDecompsBmmGridHoldsTheScoresBeforeTheMasksAdd) {
  for (bool masked : {true, false}) {
    Case c = call(9.0);
    if (masked) {
      MaskSpec m;
      m.dtype = DType::f32;
      m.shape = {SymExpr(5), SymExpr(7)};
      m.pattern = MaskPattern::random;
      m.param = 0.5;
      m.fill = MaskFill::neg_1e4;
      c.mask = m;
    }
    CaseTensors t = make_case_tensors(c, {});
    const QuantizedNumerics q = cmsis_numerics(c, lowered(c, t, Policy::shared_decomp), false).quant;
    const std::vector<double> s = scores(c, t);
    expect_holds(masked ? q.unmasked_scores : q.scores, std::fmin(0.0, min_of(s)), std::fmax(0.0, max_of(s)),
                 masked ? "unmasked scores" : "scores");
    EXPECT_EQ((masked ? q.scores : q.unmasked_scores).step, 0) << masked;
  }
}

// A graph that adds no mask to a masked call's scores (a mutant drops it)
// has no reading of the masked scores but the softmax's own: the MUL's
// holds scores the call never had. Here the MUL reads its input on a grid
// of half the range, narrower than the softmax's: taken for the unmasked
// call, not for the masked one.
TEST(CmsisNumerics, AMaskedCallWhosePathAddsNoMaskReadsTheSoftmaxAlone) {
  Case unmasked = call(0.5);
  CaseTensors t = make_case_tensors(unmasked, {});
  Graph g = lowered(unmasked, t, Policy::decompose);  // the mask dropped
  const Node* softmax = nullptr;
  for (Node& n : g.nodes) {
    if (n.op == kSoftmaxOp) softmax = &n;
    for (auto& [key, value] : n.kwargs)
      if (n.op == kMulOp && key == "a_scale") value = std::get<double>(value) / 2;
  }
  ASSERT_NE(softmax, nullptr);
  const double step = std::get<double>(*softmax->kwarg("input_scale"));
  const auto zp = static_cast<double>(std::get<int64_t>(softmax->args.at(2)));
  Case masked = unmasked;
  masked.mask = MaskSpec{};
  masked.mask->shape = {SymExpr(5), SymExpr(7)};
  const QuantizedNumerics q = cmsis_numerics(masked, g, false).quant;
  EXPECT_EQ(q.scores.step, step);
  EXPECT_EQ(q.scores.lo, (-128 - zp) * step);
  EXPECT_EQ(q.scores.hi, (127 - zp) * step);
  EXPECT_EQ(q.unmasked_scores.step, 0);
  EXPECT_LT(cmsis_numerics(unmasked, g, false).quant.scores.step, step);
}

// Through the target's declaration, as the checker reads it.
TEST(CmsisNumerics, OnlyTheHistogramObserversRangesClip) {
  Case c = call(0.5);
  CaseTensors t = make_case_tensors(c, {});
  const Graph g = lowered(c, t, Policy::decompose);
  for (const char* observer : {"minmax", "histogram"}) {
    static const TargetFixture targets;
    auto target = targets.registry.make("cortex-m", {{"observer", observer}});
    const QuantizedNumerics q = target->kernel_sets().at(0).numerics(c, g).quant;
    EXPECT_EQ(q.ranges_clip, std::string(observer) == "histogram") << observer;
    EXPECT_EQ(q.softmax_unit, std::ldexp(1.0, -20));  // arm_softmax_s8's row sum, not f16's 2^-11
    EXPECT_EQ(q.step_floor, std::numeric_limits<float>::epsilon());
  }
}

}  // namespace
}  // namespace sdpa::cortex_m
