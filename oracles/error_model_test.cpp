#include "oracles/error_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "oracles/eigen_oracle.h"
#include "oracles/oracle_test_support.h"

namespace sdpa::test {
namespace {

ErrorBound bound_of(const Case& c, DType dtype) {
  CaseTensors t = make_case_tensors(c, {});
  return error_bound(c, t, eigen_golden(c, t, {}), dtype);
}

// The case's tensors with q, k and v set to the given data (one query row).
CaseTensors one_row(const Case& c, std::vector<double> q, std::vector<double> k, std::vector<double> v) {
  CaseTensors t = make_case_tensors(c, {});
  t.q.data = std::move(q);
  t.k.data = std::move(k);
  t.v.data = std::move(v);
  return t;
}

TEST(ErrorModel, BoundShrinksWithTheUnitRoundoff) {
  Case c = make_case(2, 2, 6, 7, 8, 4);
  c.mask = mask_spec(DType::f32, {6, 7}, MaskPattern::random, 0.7, MaskFill::neg_1e4);
  double f64 = bound_of(c, DType::f64).max_bound(), f32 = bound_of(c, DType::f32).max_bound(),
         f16 = bound_of(c, DType::f16).max_bound(), bf16 = bound_of(c, DType::bf16).max_bound();
  EXPECT_GT(f64, 0.0);
  EXPECT_LT(f64, 1e-9 * bf16);
  EXPECT_LT(f64, f32);
  EXPECT_LT(f32, f16);
  EXPECT_LT(f16, bf16);
  EXPECT_LT(f32, 1e-4);  // |v| of a few units: the bound is not vacuous
}

TEST(ErrorModel, F64BoundIsPositiveEvenForZeroData) {
  Case c = make_case(1, 1, 2, 3, 4, 5);
  CaseTensors t = make_case_tensors(c, {});
  std::fill(t.v.data.begin(), t.v.data.end(), 0.0);
  ErrorBound b = error_bound(c, t, eigen_golden(c, t, {}), DType::f64);
  for (double r : b.row_bound) EXPECT_GT(r, 0.0);
}

TEST(ErrorModel, FullyMaskedRowGetsTheOutputRoundingAlone) {
  Case c = make_case(1, 1, 2, 3, 2, 2);
  c.mask = mask_spec(DType::b8, {2, 3});
  CaseTensors t = make_case_tensors(c, {});
  t.mask->data = {0, 0, 0, 1, 1, 0};
  ErrorBound b = error_bound(c, t, eigen_golden(c, t, {}), DType::bf16);
  EXPECT_EQ(b.row_bound[0], ulp(DType::bf16, 0.0));
  EXPECT_GT(b.row_bound[1], 100 * b.row_bound[0]);
  EXPECT_EQ(b.inputs()["row"], 1);
  EXPECT_EQ(b.inputs()["n"], 2);
}

// A weight below f32's smallest normal may flush to 0 (XNNPACK's exp does
// below -87.3): the bound admits that loss, and no more than a few times it.
TEST(ErrorModel, AWeightLostToUnderflowIsWithinTheBound) {
  Case c = make_case(1, 1, 1, 2, 1, 1);
  c.scale = 1.0;
  // Scores 100 and 0: the second weight is e^-100.
  CaseTensors t = one_row(c, {1.0}, {100.0, 0.0}, {0.0, 1.0});
  Golden g = eigen_golden(c, t, {});
  const double lost = g.out.data[0];  // a flush-to-zero kernel outputs 0
  ASSERT_GT(lost, 0.0);
  ASSERT_LT(lost, 1e-40);
  ErrorBound b = error_bound(c, t, g, DType::f32);
  EXPECT_GE(b.row_bound[0], lost);
  EXPECT_LT(b.row_bound[0], 1e-36);  // a few f32 smallest normals, not a loose bound
}

TEST(ErrorModel, InputsHoldEveryTermOfTheWorstRow) {
  Case c = make_case(2, 1, 3, 4, 5, 6);
  c.dropout_p = 0.25;
  ErrorBound b = bound_of(c, DType::f16);
  for (const char* key :
       {"dtype", "u_acc", "u_out", "d", "n", "scale", "qn", "kn", "M", "Vmax", "dropout_factor",
        "logit_err", "softmax_rel", "bound", "typical_estimate", "row", "row_index"})
    EXPECT_TRUE(b.inputs().contains(key)) << key;
  EXPECT_EQ(b.inputs()["dtype"], "f16");
  EXPECT_EQ(b.inputs()["u_acc"], std::ldexp(1.0, -24));
  EXPECT_EQ(b.inputs()["dropout_factor"], 1.0 / 0.75);
  EXPECT_EQ(b.inputs()["bound"], b.max_bound());
  EXPECT_LT(b.inputs()["typical_estimate"].get<double>(), b.max_bound());
}

TEST(ErrorModel, NonFiniteRowsGetNoFiniteBoundAndNoNumericsNoBound) {
  Case c = make_case(1, 1, 2, 3, 2, 2);
  CaseTensors t = make_case_tensors(c, {});
  t.v.data[0] = INFINITY;
  ErrorBound b = error_bound(c, t, eigen_golden(c, t, {}), DType::f32);
  EXPECT_EQ(b.row_bound[0], INFINITY);
  // An integer dtype has no float model, and no numerics is no bound at all.
  EXPECT_THROW(bound_of(c, DType::i8), std::invalid_argument);
  CaseTensors t2 = make_case_tensors(c, {});
  EXPECT_THROW(error_bound(c, t2, eigen_golden(c, t2, {}), KernelNumerics{}), std::invalid_argument);
}

// The bound follows the declaration: f32 scores drop the bf16 logit charge,
// and P rounded in f32 drops the bf16 P charge, on the same bf16 case.
TEST(ErrorModel, DeclaredNumericsNotTheCaseDtypeSetTheBound) {
  Case c = make_case(2, 2, 4, 16, 16, 8);
  c.dtype = DType::bf16;
  c.scale = 3.0;  // large logits: the stored-score term matters
  CaseTensors t = make_case_tensors(c, {});
  Golden g = eigen_golden(c, t, {});
  const double naive = error_bound(c, t, g, KernelNumerics::naive(DType::bf16)).max_bound();
  FloatNumerics fused{DType::bf16, DType::f32, DType::f32, DType::f32, DType::bf16, false};
  const double custom = error_bound(c, t, g, KernelNumerics::floating(fused)).max_bound();
  const double upcast = error_bound(c, t, g, KernelNumerics::upcast(DType::bf16, true)).max_bound();
  EXPECT_LT(custom, naive / 4);
  EXPECT_LT(upcast, custom);
  ErrorBound b = error_bound(c, t, g, KernelNumerics::floating(fused));
  EXPECT_EQ(b.inputs()["scores"], "f32");
  EXPECT_EQ(b.inputs()["probabilities"], "bf16");
  EXPECT_LE(b.inputs()["W"].get<double>(), b.inputs()["Vmax"].get<double>());
}

// P @ V rounding is charged against sum_j p_j |v_j|, not max |V|: a row of
// small values next to one huge value key that the softmax ignores.
TEST(ErrorModel, ValueRoundingIsWeightedByTheSoftmax) {
  Case c = make_case(1, 1, 1, 2, 2, 1);
  c.dtype = DType::bf16;
  // Key 1 weighs about e^-22.6 = 1.5e-10.
  CaseTensors t = one_row(c, {1.0, 1.0}, {8.0, 8.0, -8.0, -8.0}, {0.01, 1000.0});
  Golden g = eigen_golden(c, t, {});
  ErrorBound b = error_bound(c, t, g, KernelNumerics::upcast(DType::bf16, true));
  EXPECT_LT(b.row_bound[0], 1e-3);  // u * max|V| would be 4
}

// Int8 numerics as cortex-m declares them: a fixed-point softmax whose
// output is P on 1/256 steps (doubled: P = 1 saturates a full step low).
QuantizedNumerics int8_numerics() {
  QuantizedNumerics qn;
  qn.score_step = 1.0 / 1024;
  qn.prob_step = 2.0 / 256;
  qn.multiplier_rel = std::ldexp(1.0, -30);
  qn.softmax_unit = std::ldexp(1.0, -20);
  qn.softmax_abs = std::ldexp(1.0, -28);
  return qn;
}

// A quantized P moves a weight by at most half a step and at most its own
// value (it rounds to 0): a long row's small weights are charged what they
// weigh. One key of 1,000 holds half the row, each other weighs e^-7 of it
// (4.6e-4, under half a step): half a step each would be 1,000 / 512 of |v|.
TEST(ErrorModel, AQuantizedPsSmallWeightsAreChargedTheirValueNotHalfAStep) {
  Case c = make_case(1, 1, 1, 1000, 1, 1);
  CaseTensors t = make_case_tensors(c, {});
  t.q.data = {1.0};
  std::fill(t.k.data.begin(), t.k.data.end(), 0.0);
  t.k.data[0] = 7.0;
  std::fill(t.v.data.begin(), t.v.data.end(), 1.0);
  Golden g = eigen_golden(c, t, {});
  ErrorBound b = error_bound(c, t, g, KernelNumerics::quantized(int8_numerics()));
  EXPECT_LT(b.row_bound[0], 1000.0 / 512 / 2);
  EXPECT_GT(b.row_bound[0], 999 * std::exp(-7.0) / 2);  // what the small weights do weigh
}

// Where the quantizer clips tails by design (a histogram observer's grid),
// the most an element moves is how far it falls outside the range, not
// half a step; the output's range charges how far the golden falls outside
// it. A grid never loosens the bound otherwise: without `ranges_clip` a
// range is not read, and a step coarser than max|x| / 127 is not taken.
TEST(ErrorModel, AGridThatClipsATailChargesHowFarTheDataFallsOutside) {
  Case c = make_case(1, 1, 1, 2, 1, 1);
  CaseTensors t = one_row(c, {0.5}, {0.5, -0.5}, {1.0, 1.0});
  Golden g = eigen_golden(c, t, {});
  QuantizedNumerics qn = int8_numerics();
  qn.v = {1.0 / 127, -1.0, 1.0};
  qn.out = {1.0 / 127, -1.0, 1.0};
  qn.ranges_clip = true;
  const double within = error_bound(c, t, g, KernelNumerics::quantized(qn)).row_bound[0];
  EXPECT_LT(within, 0.1);
  qn.v.hi = 0.5;  // v's 1.0 clips to 0.5
  qn.ranges_clip = false;
  EXPECT_DOUBLE_EQ(error_bound(c, t, g, KernelNumerics::quantized(qn)).row_bound[0], within);
  qn.v.step = 0.5;
  EXPECT_DOUBLE_EQ(error_bound(c, t, g, KernelNumerics::quantized(qn)).row_bound[0], within);
  qn.v.step = 1.0 / 127;
  qn.ranges_clip = true;
  ErrorBound v_clipped = error_bound(c, t, g, KernelNumerics::quantized(qn));
  EXPECT_DOUBLE_EQ(v_clipped.inputs()["e_v"].get<double>(), 0.5);
  EXPECT_GT(v_clipped.row_bound[0], within + 0.5);
  qn.v.hi = 1.0;
  qn.out.hi = 0.75;  // the golden 1.0 lies 0.25 past the output's range
  ErrorBound out_clipped = error_bound(c, t, g, KernelNumerics::quantized(qn));
  EXPECT_DOUBLE_EQ(out_clipped.inputs()["e_o"].get<double>(), 0.25);
  EXPECT_GT(out_clipped.row_bound[0], within + 0.24);  // in place of half a step, 1 / 254
}

// One query row over three keys at scale 1 with an f32 mask: q = 1,
// k = (2, 0, -1) (so the scores without the mask are 2, 0, -1), v = (1, 2,
// 3), and the mask's values `mask`.
Case three_keys_case() {
  Case c = make_case(1, 1, 1, 3, 1, 1);
  c.scale = 1.0;
  c.mask = mask_spec(DType::f32, {1, 3}, MaskPattern::random, 0.5, MaskFill::neg_1e4);
  return c;
}

// The bound with `grid` of qn set to [lo, hi] on 1/64 steps, for each
// (lo, hi) the returned function is called with.
auto clipping(const Case& c, const CaseTensors& t, const Golden& g, QuantizedNumerics& qn,
              Int8Grid QuantizedNumerics::*grid) {
  return [&c, &t, &g, &qn, grid](double lo, double hi) {
    qn.*grid = {1.0 / 64, lo, hi};
    return error_bound(c, t, g, KernelNumerics::quantized(qn));
  };
}

CaseTensors three_keys(const Case& c, std::vector<double> mask) {
  CaseTensors t = one_row(c, {1.0}, {2.0, 0.0, -1.0}, {1.0, 2.0, 3.0});
  t.mask->data = std::move(mask);
  return t;
}

// The scores' grid clips too. A score past its top is clipped down: a
// logit error of that distance. One below its bottom is clipped up: it
// weighs at most what a score at the bottom would, so a key 200 below the
// row's max clipped to 50 below it changes nothing the bound could see,
// and one clipped to half a unit above its score is charged its weight.
TEST(ErrorModel, AScoreClippedByTheScoresGridIsChargedOnTheSideItFalls) {
  const Case c = three_keys_case();
  CaseTensors t = three_keys(c, {0.0, 0.0, -199.0});  // scores 2, 0, -200
  Golden g = eigen_golden(c, t, {});
  QuantizedNumerics qn = int8_numerics();
  qn.ranges_clip = true;
  auto bound = clipping(c, t, g, qn, &QuantizedNumerics::scores);
  const double within = bound(-300, 4).row_bound[0];
  EXPECT_LT(bound(-50, 4).row_bound[0], within * (1 + 1e-12));  // e^-52 of the row
  EXPECT_GT(bound(-0.5, 300).row_bound[0], within + 3 * std::exp(-2.5) / 2);
  ErrorBound top = bound(-300, 1.5);
  EXPECT_GE(top.inputs()["logit_err"].get<double>(), 0.5);
  EXPECT_GT(top.row_bound[0], within);
}

// Before a mask's add the scores are (q·k)·scale alone, and a grid there
// clips them, not the masked scores: a key whose unmasked score 2 is
// clipped to 1.5 is a logit error of 0.5 although its masked score, -1, is
// within the scores' grid; one whose unmasked score 0 is clipped up to 0.5
// (more than a step) has the kernel score 0.5 - 2 with its mask, and is
// charged what it then weighs, e^(-1.5 - (-1)) of the row.
TEST(ErrorModel, AGridBeforeTheMasksAddClipsTheUnmaskedScores) {
  const Case c = three_keys_case();
  CaseTensors t = three_keys(c, {-3.0, -2.0, -4.0});  // masked scores -1, -2, -5
  Golden g = eigen_golden(c, t, {});
  QuantizedNumerics qn = int8_numerics();
  qn.ranges_clip = true;
  auto bound = clipping(c, t, g, qn, &QuantizedNumerics::unmasked_scores);
  const double within = bound(-4, 4).row_bound[0];
  ErrorBound top = bound(-4, 1.5);
  EXPECT_GE(top.inputs()["logit_err"].get<double>(), 0.5);
  EXPECT_GT(top.row_bound[0], within);
  qn.unmasked_scores = {};
  qn.scores = {1.0 / 64, -6, 1.5};  // the masked scores' grid holds them all
  EXPECT_LT(error_bound(c, t, g, KernelNumerics::quantized(qn)).inputs()["logit_err"].get<double>(), 0.5);
  qn.scores = {};
  ErrorBound low = bound(0.5, 4);
  EXPECT_GT(low.row_bound[0], within + 2 * std::exp(-1.5 - (-1.0)));
  // Raised to the grid's bottom without their masks, the two keys would
  // add e^1.5 each to the row's sum: softmax_rel past 8.
  EXPECT_LT(low.inputs()["softmax_rel"].get<double>(), 1.0);
  // A key masked at -1e4 weighs e^-1e4 of the row: its unmasked score
  // clipped down lowers nothing that counts.
  t.mask->data = {-1e4, -2.0, -4.0};
  g = eigen_golden(c, t, {});
  EXPECT_LT(bound(-4, 1.5).inputs()["logit_err"].get<double>(), 0.5);
}

// The kernel adds the mask in f32: a row masked at -1e4 has each score
// rounded by up to half an ulp of 1e4, a logit error beside the scores'
// step.
TEST(ErrorModel, AnInt8RowMaskedAtMinus1e4IsChargedTheF32AddsRounding) {
  Case c = make_case(1, 1, 1, 2, 1, 1);
  c.mask = mask_spec(DType::f32, {1, 2}, MaskPattern::random, 0.5, MaskFill::neg_1e4);
  CaseTensors t = one_row(c, {0.0}, {0.0, 0.0}, {1.0, -1.0});
  t.mask->data = {-1e4, -1e4};
  Golden g = eigen_golden(c, t, {});
  const QuantizedNumerics qn = int8_numerics();
  const double logit = error_bound(c, t, g, KernelNumerics::quantized(qn)).inputs()["logit_err"].get<double>();
  EXPECT_GE(logit, qn.score_step + 1e4 * std::ldexp(1.0, -24));
}

// A weight's relative error compounds the logits' and the softmax's own:
// (1 + expm1(2 logit)) (1 + (n + 2) u) - 1, more than their sum where both
// are large.
TEST(ErrorModel, TheSoftmaxsRoundingCompoundsWithTheLogitError) {
  Case c = make_case(1, 1, 1, 1, 1, 1);
  CaseTensors t = make_case_tensors(c, {});
  Golden g = eigen_golden(c, t, {});
  QuantizedNumerics qn = int8_numerics();
  qn.score_step = 0.5;
  qn.softmax_unit = 0.01;
  const nlohmann::json in = error_bound(c, t, g, KernelNumerics::quantized(qn)).inputs();
  const double logit = in["logit_err"].get<double>(), n = 1;
  EXPECT_GE(logit, 0.5);
  EXPECT_NEAR(in["softmax_rel"].get<double>(), std::exp(2 * logit) * (1 + (n + 2) * 0.01) - 1, 1e-12);
}

// Each key's logit error sets its own weight's error: a key whose |k|_1
// is large (so its logit error is, here 20 times q's half step) but whose
// weight is e^-20 of the row no longer lends that error to the key that
// holds the row. Row-wide, expm1(2 · 0.08) = 0.17 of |v| = 1 would be
// charged; key by key, about 2 · 0.0015.
TEST(ErrorModel, AKeysLogitErrorIsChargedToItsOwnWeight) {
  Case c = make_case(1, 1, 1, 2, 1, 1);
  c.scale = 1.0;
  CaseTensors t = one_row(c, {1.0}, {0.0, -20.0}, {1.0, 1.0});
  Golden g = eigen_golden(c, t, {});
  QuantizedNumerics qn = int8_numerics();
  qn.k = {1.0 / 1024, -32.0, 32.0};  // k's step finer than max|k| / 127
  ErrorBound b = error_bound(c, t, g, KernelNumerics::quantized(qn));
  EXPECT_GT(b.inputs()["logit_err"].get<double>(), 0.07);  // key 1's
  EXPECT_LT(b.row_bound[0], 0.03);
  // Key 0's own error is charged: about 2 · 0.0015 beside the roundings
  // of P (1/256), v and the output (1/254 each).
  const double mean = b.inputs()["softmax_rel_mean"].get<double>();
  EXPECT_GT(mean, 2 * qn.score_step);
  EXPECT_LT(mean, 0.01);
  EXPECT_GT(b.row_bound[0], mean + 1.0 / 256 + 2.0 / 254);
}

// A row masked at -1e4 lies far below a clipping scores' grid: every key
// is clipped up to its bottom and the kernel averages v uniformly, where
// the golden weighs the unmasked scores. No logit error bounds that
// (softmax_rel is inf), but the cap does: both are weighted sums of v rows
// whose weights sum to 1. The row stays checked, and the uniform average
// the kernel gives stays within it.
TEST(ErrorModel, ARowMaskedFarBelowTheScoresGridKeepsAFiniteCap) {
  Case c = make_case(1, 1, 1, 3, 1, 1);
  c.scale = 1.0;
  c.mask = mask_spec(DType::f32, {1, 3}, MaskPattern::random, 0.5, MaskFill::neg_1e4);
  CaseTensors t = one_row(c, {1.0}, {4.0, 0.0, -4.0}, {1.0, -1.0, -1.0});
  t.mask->data = {-1e4, -1e4, -1e4};
  Golden g = eigen_golden(c, t, {});
  QuantizedNumerics qn = int8_numerics();
  qn.ranges_clip = true;
  qn.scores = {1.0 / 16, -8.0, 8.0};
  ErrorBound b = error_bound(c, t, g, KernelNumerics::quantized(qn));
  ASSERT_TRUE(std::isfinite(b.row_bound[0]));
  EXPECT_TRUE(b.inputs()["capped"].get<bool>());
  const double uniform = -1.0 / 3;
  EXPECT_GT(b.row_bound[0], std::fabs(uniform - g.out.data[0]));
  EXPECT_LT(b.row_bound[0], 2.1 * (1 + 1.0 / 127));  // (2 + rounding) (Vmax + s_v/2 + ...)
}

// Each input's grid clips as v's does, P's range clips a weight past its
// top down to it, and a step the graph declares finer than max|x| / 127 is
// the one charged.
TEST(ErrorModel, QKPGridsClipAndAFinerDeclaredStepIsCharged) {
  Case c = make_case(1, 1, 1, 1, 1, 1);
  CaseTensors t = one_row(c, {0.5}, {0.5}, {1.0});
  Golden g = eigen_golden(c, t, {});
  QuantizedNumerics qn = int8_numerics();
  qn.ranges_clip = true;
  const double within = error_bound(c, t, g, KernelNumerics::quantized(qn)).row_bound[0];
  auto inputs = [&] { return error_bound(c, t, g, KernelNumerics::quantized(qn)).inputs(); };
  qn.q = {1.0 / 127, -0.25, 0.25};  // q's 0.5 clips to 0.25
  EXPECT_DOUBLE_EQ(inputs()["e_q"].get<double>(), 0.25);
  qn.q = {};
  qn.k = {1.0 / 127, -0.125, 0.125};
  EXPECT_DOUBLE_EQ(inputs()["e_k"].get<double>(), 0.375);
  qn.k = {};
  qn.prob = {1.0 / 256, 0.0, 0.75};  // the one weight, 1, clips to 0.75
  EXPECT_GT(error_bound(c, t, g, KernelNumerics::quantized(qn)).row_bound[0], within + 0.24);
  qn.prob = {};
  qn.v = {1.0 / 4096, -8.0, 8.0};  // finer than max|v| / 127
  EXPECT_DOUBLE_EQ(inputs()["s_v"].get<double>(), 1.0 / 4096);
  EXPECT_LT(error_bound(c, t, g, KernelNumerics::quantized(qn)).row_bound[0], within);
}

// The reference kernel in emulated numerics is a naive computation of the
// call in the case dtype: every element must stay within its row's bound.
TEST(ErrorModel, NaiveLowPrecisionKernelsStayWithinTheBound) {
  double worst_ratio = 0;
  int rows = 0;
  for (uint64_t i = 0; i < 600; ++i) {
    Case c = varied_case(i, {/*bshd=*/false, /*symbols=*/false});
    if (c.dtype == DType::f64) continue;
    CaseTensors t = make_case_tensors(c, {});
    Golden g = eigen_golden(c, t, {});
    ErrorBound b = error_bound(c, t, g, c.dtype);
    Tensor naive = reference_sdpa(c, t, Numerics::emulated);
    const int64_t Ev = c.value_dim;
    for (int64_t e = 0; e < naive.numel(); ++e) {
      if (!std::isfinite(naive.data[e]) || !std::isfinite(g.out.data[e])) continue;
      const double err = std::fabs(naive.data[e] - g.out.data[e]), bound = b.row_bound[e / Ev];
      EXPECT_LE(err, bound) << "case " << i << " " << case_summary(c) << " element " << e << "\n"
                            << b.inputs().dump();
      worst_ratio = std::max(worst_ratio, err / bound);
    }
    rows += static_cast<int>(b.row_bound.size());
  }
  std::printf("%d rows, largest error / bound %.3g\n", rows, worst_ratio);
  EXPECT_GT(worst_ratio, 1e-3);  // the bound is not vacuous
}


// The oracle hands the error model its per-row facts (Golden::cache); a
// golden without them gets the same facts computed from the call: the same
// bound, row by row, for every kind of numerics and varied cases (masks,
// causal, dropout, GQA, bshd, non-finite data).
TEST(ErrorModel, TheOraclesFactsGiveTheBoundComputedWithoutThem) {
  std::vector<KernelNumerics> kinds = {KernelNumerics::naive(DType::f64), KernelNumerics::naive(DType::bf16),
                                       KernelNumerics::upcast(DType::f16, true), KernelNumerics::upcast(DType::bf16, false)};
  KernelNumerics exact = KernelNumerics::naive(DType::f64);
  exact.kind = KernelNumerics::Kind::exact;
  kinds.push_back(exact);
  int rows = 0;
  for (uint64_t i = 0; i < 300; ++i) {
    Case c = varied_case(i);
    for (const Assignment& at : c.runs()) {
      CaseTensors t = make_case_tensors(c, at);
      if (i % 7 == 3 && t.k.numel() > 0) t.k.data[0] = i % 2 ? INFINITY : NAN;
      Golden with = eigen_golden(c, t, at), without = with;
      ASSERT_NE(with.cache, nullptr);
      without.cache.reset();
      for (const KernelNumerics& n : kinds) {
        ErrorBound a = error_bound(c, t, with, n), b = error_bound(c, t, without, n);
        ASSERT_EQ(a.row_bound, b.row_bound) << "case " << i << " " << case_summary(c);
        ASSERT_EQ(a.row_typical, b.row_typical) << "case " << i;
        ASSERT_EQ(a.inputs(), b.inputs()) << "case " << i;
        rows += static_cast<int>(a.row_bound.size());
      }
    }
  }
  EXPECT_GT(rows, 1000);
}

}  // namespace
}  // namespace sdpa::test
