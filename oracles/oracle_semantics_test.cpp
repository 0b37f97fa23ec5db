// Hand-computed outputs every oracle must give; instantiated per oracle in
// eigen_oracle_test.cpp and torch_oracle_test.cpp.
#include <algorithm>
#include <cmath>

#include "harness/case/tensor_data.h"
#include "oracles/oracle_test_support.h"

namespace sdpa::test {
namespace {

const double kLog3 = std::log(3.0);

TEST_P(OracleSemantics, SingleKeyGivesItsValueRow) {
  Case c = make_case(2, 2, 3, 1, 4, 5);
  CaseTensors t = make_case_tensors(c, {});
  Golden g = run(c, t);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t e = 0; e < 5; ++e) EXPECT_EQ(out_at(g, {h, i, e}), t.v.data[h * 5 + e]);
}

TEST_P(OracleSemantics, ScaleZeroAveragesValueRows) {
  Case c = make_case(1, 1, 2, 4, 3, 2);
  c.scale = 0.0;
  CaseTensors t = make_case_tensors(c, {});
  Golden g = run(c, t);
  for (int64_t e = 0; e < 2; ++e) {
    double mean = 0;
    for (int64_t j = 0; j < 4; ++j) mean += t.v.data[j * 2 + e] / 4;
    EXPECT_NEAR(out_at(g, {0, 0, e}), mean, 1e-15);
    EXPECT_NEAR(out_at(g, {0, 1, e}), mean, 1e-15);
  }
}

TEST_P(OracleSemantics, NegativeScaleIsAppliedAfterTheDotProduct) {
  Case c = make_case(1, 1, 1, 2, 1, 1);
  c.scale = -1.0;
  CaseTensors t = make_case_tensors(c, {});
  t.q.data = {1};
  t.k.data = {0, kLog3};
  t.v.data = {4, 8};
  // Weights 1 : 1/3.
  EXPECT_NEAR(out_at(run(c, t), {0, 0, 0}), 5.0, 1e-14);
}

TEST_P(OracleSemantics, CausalIsTopLeft) {
  Case c = make_case(1, 1, 2, 4, 1, 1);
  c.is_causal = true;
  c.scale = 1.0;
  CaseTensors t = make_case_tensors(c, {});
  t.q.data = {1, 1};
  t.k.data = {0, kLog3, 5, 7};
  t.v.data = {4, 8, 100, 1000};
  Golden g = run(c, t);
  EXPECT_EQ(out_at(g, {0, 0, 0}), 4.0);  // bottom-right would keep keys 0..2
  EXPECT_NEAR(out_at(g, {0, 1, 0}), 0.25 * 4 + 0.75 * 8, 1e-14);
  EXPECT_EQ(g.fully_masked, (std::vector<uint8_t>{0, 0}));
}

TEST_P(OracleSemantics, StartPosCausalKeepsKeysUpToStartPosPlusRow) {
  // A KV-cache step at start_pos 1: row 0 keeps keys 0..1, row 1 keys
  // 0..2, key 3 is past both (rows 1..2 of a 4-key causal mask).
  Case c = make_case(1, 1, 2, 4, 1, 1);
  c.is_causal = true;
  c.causal_alignment = CausalAlignment::start_pos;
  c.scale = 1.0;
  CaseTensors t = make_case_tensors(c, {});
  t.start_pos = 1;
  t.q.data = {1, 1};
  t.k.data = {0, kLog3, kLog3, 9};
  t.v.data = {4, 8, 16, 1000};
  Golden g = run(c, t);
  EXPECT_NEAR(out_at(g, {0, 0, 0}), 0.25 * 4 + 0.75 * 8, 1e-14);
  EXPECT_NEAR(out_at(g, {0, 1, 0}), (4 + 3 * 8 + 3 * 16) / 7.0, 1e-14);
  t.start_pos = 0;  // top-left
  EXPECT_EQ(out_at(run(c, t), {0, 0, 0}), 4.0);
}

TEST_P(OracleSemantics, GqaRepeatsKvHeadsInInterleaveOrder) {
  Case c = make_case(4, 2, 1, 2, 1, 1);
  c.enable_gqa = true;
  c.scale = 1.0;
  CaseTensors t = make_case_tensors(c, {});
  t.q.data = {1, 1, 1, 1};
  t.k.data = {50, 0, 0, 50};  // kv head 0 picks key 0, kv head 1 key 1
  t.v.data = {1, 2, 3, 4};
  Golden g = run(c, t);
  EXPECT_NEAR(out_at(g, {0, 0, 0}), 1.0, 1e-12);
  EXPECT_NEAR(out_at(g, {1, 0, 0}), 1.0, 1e-12);
  EXPECT_NEAR(out_at(g, {2, 0, 0}), 4.0, 1e-12);
  EXPECT_NEAR(out_at(g, {3, 0, 0}), 4.0, 1e-12);
}

TEST_P(OracleSemantics, SingleKvHeadBroadcastsWithoutGqa) {
  Case c = make_case(3, 1, 1, 2, 1, 1);
  c.scale = 1.0;
  CaseTensors t = make_case_tensors(c, {});
  t.q.data = {1, -1, 0};  // each query head reads the one kv head its own way
  t.k.data = {50, 0};
  t.v.data = {1, 2};
  Golden g = run(c, t);
  EXPECT_NEAR(out_at(g, {0, 0, 0}), 1.0, 1e-12);
  EXPECT_NEAR(out_at(g, {1, 0, 0}), 2.0, 1e-12);
  EXPECT_NEAR(out_at(g, {2, 0, 0}), 1.5, 1e-15);
}

// Two query rows over keys {0, 9, ln 3} with values {4, 1000, 8}: row 0
// fully masked, row 1 keeping keys 0 and 2 (weights 1 : 3, output 7).
Case masked_rows_case(MaskSpec mask) {
  Case c = make_case(1, 1, 2, 3, 1, 1);
  c.scale = 1.0;
  c.mask = mask;
  return c;
}
CaseTensors masked_rows_tensors(const Case& c, std::vector<double> mask) {
  CaseTensors t = make_case_tensors(c, {});
  t.q.data = {1, 1};
  t.k.data = {0, 9, kLog3};
  t.v.data = {4, 1000, 8};
  t.mask->data = std::move(mask);
  return t;
}

TEST_P(OracleSemantics, FullyMaskedBoolRowIsZeroAndFlagged) {
  Case c = masked_rows_case(mask_spec(DType::b8, {2, 3}));
  Golden g = run(c, masked_rows_tensors(c, {0, 0, 0, 1, 0, 1}));
  EXPECT_EQ(out_at(g, {0, 0, 0}), 0.0);
  EXPECT_NEAR(out_at(g, {0, 1, 0}), 7.0, 1e-14);
  EXPECT_EQ(g.fully_masked, (std::vector<uint8_t>{1, 0}));
}

// aten: _safe_softmax gives the fully masked row weights 0, and the matmul
// still multiplies them into V: 0 * inf is NaN there. With V finite it is 0.
TEST_P(OracleSemantics, FullyMaskedRowMultipliesItsZeroWeightsIntoV) {
  Case c = masked_rows_case(mask_spec(DType::b8, {2, 3}));
  CaseTensors t = masked_rows_tensors(c, {0, 0, 0, 1, 1, 1});
  EXPECT_EQ(out_at(run(c, t), {0, 0, 0}), 0.0);
  t.v.data[1] = INFINITY;
  Golden g = run(c, t);
  EXPECT_TRUE(std::isnan(out_at(g, {0, 0, 0})));
  EXPECT_EQ(out_at(g, {0, 1, 0}), INFINITY);
  EXPECT_EQ(g.fully_masked, (std::vector<uint8_t>{1, 0}));
}

// aten adds a bool or causal mask as 0 / -inf: a NaN score at a dropped key
// stays NaN (NaN + -inf), where writing -inf over it would hide it.
TEST_P(OracleSemantics, ADroppedKeysNanScoreStaysNan) {
  Case c = masked_rows_case(mask_spec(DType::b8, {2, 3}));
  CaseTensors t = masked_rows_tensors(c, {1, 1, 1, 1, 0, 1});
  t.k.data[1] = std::nan("");
  Golden g = run(c, t);
  EXPECT_TRUE(std::isnan(out_at(g, {0, 0, 0})));  // key 1 kept: NaN
  EXPECT_TRUE(std::isnan(out_at(g, {0, 1, 0})));  // key 1 dropped: still NaN
}

TEST_P(OracleSemantics, MinFilledRowIsAnOrdinarySoftmax) {
  const double lowest_f32 = lowest(DType::f32);
  Case c = masked_rows_case(mask_spec(DType::f32, {2, 3}));
  Golden g = run(c, masked_rows_tensors(c, {lowest_f32, lowest_f32, lowest_f32, 0, -INFINITY, 0}));
  EXPECT_NEAR(out_at(g, {0, 0, 0}), (4 + 1000 + 8) / 3.0, 1e-12);  // uniform, not 0
  EXPECT_NEAR(out_at(g, {0, 1, 0}), 7.0, 1e-14);
  EXPECT_EQ(g.fully_masked, (std::vector<uint8_t>{0, 0}));
}

TEST_P(OracleSemantics, AdditiveMaskIsAddedToScaledScores) {
  Case c = make_case(1, 1, 1, 3, 1, 1);
  c.scale = 2.0;
  c.mask = mask_spec(DType::f64, {3});
  CaseTensors t = make_case_tensors(c, {});
  t.q.data = {1};
  t.k.data = {kLog3 / 2, 0, 0};
  t.v.data = {1, 2, 9};
  t.mask->data = {0, kLog3, 0};
  // Scores {ln 3, ln 3, 0}: weights 3 : 3 : 1.
  EXPECT_NEAR(out_at(run(c, t), {0, 0, 0}), 18.0 / 7.0, 1e-14);
}

TEST_P(OracleSemantics, LowRankMaskBroadcastsOverHeadsAndRows) {
  Case c = make_case(2, 2, 2, 3, 1, 1);
  c.scale = 1.0;
  c.mask = mask_spec(DType::b8, {3});
  CaseTensors t = make_case_tensors(c, {});
  t.q.data = {1, 1, 1, 1};
  t.k.data = {0, 9, kLog3, 0, 9, kLog3};
  t.v.data = {4, 1000, 8, 4, 1000, 8};
  t.mask->data = {1, 0, 1};
  Golden g = run(c, t);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 2; ++i) EXPECT_NEAR(out_at(g, {h, i, 0}), 7.0, 1e-14);
}

TEST_P(OracleSemantics, AdditiveNegInfMaskEqualsBoolMask) {
  Case c = make_case(2, 2, 5, 6, 4, 3);
  c.batch = {2};
  // full-row: one row drops every key, the others keep keys at random.
  c.mask = mask_spec(DType::b8, {2, 1, 5, 6}, MaskPattern::full_row, 0.5);
  Case additive = c;
  additive.mask->dtype = DType::f32;
  Golden by_bool = run(c, make_case_tensors(c, {}));
  Golden by_add = run(additive, make_case_tensors(additive, {}));
  EXPECT_EQ(by_bool.out.data, by_add.out.data);
  EXPECT_EQ(by_bool.fully_masked, by_add.fully_masked);
  EXPECT_NE(std::count(by_bool.fully_masked.begin(), by_bool.fully_masked.end(), 1), 0);
}

// Batch element b of q, k, v as a call of its own, keeping keys [from, to).
CaseTensors keys_of_batch(const Case& c, const CaseTensors& t, int64_t b, int64_t from, int64_t to) {
  const int64_t Lq = c.q_len.constant(), Lkv = c.kv_len.constant(), E = c.head_dim, Ev = c.value_dim;
  CaseTensors out;
  out.q = Tensor(c.dtype, {1, 1, Lq, E});
  out.k = Tensor(c.dtype, {1, 1, to - from, E});
  out.v = Tensor(c.dtype, {1, 1, to - from, Ev});
  std::copy_n(t.q.data.begin() + b * Lq * E, Lq * E, out.q.data.begin());
  std::copy_n(t.k.data.begin() + (b * Lkv + from) * E, (to - from) * E, out.k.data.begin());
  std::copy_n(t.v.data.begin() + (b * Lkv + from) * Ev, (to - from) * Ev, out.v.data.begin());
  return out;
}

// A padded batch element attends to its own valid keys only: the same as
// the call on those keys alone. Pads of seed 7 under param 4: 4 and 2
// (tensor_data_test), so element 0 keeps 2 keys and element 1 keeps 4.
TEST_P(OracleSemantics, PerBatchPaddingAttendsToEachElementsOwnKeys) {
  Case c = make_case(1, 1, 3, 6, 4, 3);
  c.batch = {2};
  c.mask = mask_spec(DType::b8, {2, 1, 1, 6}, MaskPattern::per_batch_padding, 4);
  const CaseTensors t = make_case_tensors(c, {});
  const Golden g = run(c, t);
  const int64_t kept[] = {2, 4};
  for (int64_t b = 0; b < 2; ++b) {
    Case alone = make_case(1, 1, 3, kept[b], 4, 3);
    alone.batch = {1};
    const Golden want = run(alone, keys_of_batch(c, t, b, 0, kept[b]));
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t e = 0; e < 3; ++e)
        EXPECT_NEAR(out_at(g, {b, 0, i, e}), out_at(want, {0, 0, i, e}), 1e-14) << b << " " << i << " " << e;
  }
}

// Left padding p: every row attends to keys [p, Lkv) alone.
TEST_P(OracleSemantics, LeftPaddingAttendsToTheKeysAfterThePadding) {
  Case c = make_case(1, 1, 3, 7, 4, 3);
  c.batch = {1};
  c.mask = mask_spec(DType::f32, {1, 1, 1, 7}, MaskPattern::left_padding, 5, MaskFill::neg_inf);
  const CaseTensors t = make_case_tensors(c, {});
  const Golden g = run(c, t);
  Case alone = make_case(1, 1, 3, 2, 4, 3);
  alone.batch = {1};
  const Golden want = run(alone, keys_of_batch(c, t, 0, 5, 7));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t e = 0; e < 3; ++e) EXPECT_NEAR(out_at(g, {0, 0, i, e}), out_at(want, {0, 0, i, e}), 1e-14);
  EXPECT_EQ(g.fully_masked, (std::vector<uint8_t>{0, 0, 0}));
}

TEST_P(OracleSemantics, BshdLayoutMeansTheSameCall) {
  Case c = make_case(3, 3, 4, 5, 6, 2);
  c.batch = {2};
  c.mask = mask_spec(DType::b8, {4, 5}, MaskPattern::random, 0.6);
  Case bshd = c;
  bshd.layout = Layout::bshd;
  CaseTensors t = make_case_tensors(bshd, {});
  EXPECT_EQ(t.q.shape, (Shape{2, 4, 3, 6}));
  Golden a = run(c, make_case_tensors(c, {})), b = run(bshd, t);
  ASSERT_EQ(a.out.shape, b.out.shape);
  for (int64_t i = 0; i < a.out.numel(); ++i) EXPECT_NEAR(a.out.data[i], b.out.data[i], 1e-15);
}

TEST_P(OracleSemantics, DropoutScalesKeptWeightsAndIsDeterministic) {
  Case c = make_case(2, 2, 8, 1, 2, 3);
  c.batch = {2};
  c.dropout_p = 0.4;
  CaseTensors t = make_case_tensors(c, {});
  Golden g = run(c, t);
  EXPECT_EQ(g.out.data, run(c, t).out.data);
  CounterStream stream(c.data.seed, "dropout");
  int dropped = 0;
  for (int64_t row = 0; row < 2 * 2 * 8; ++row) {
    // One key: the weight of row r sits at flat index r of [B, Hq, Lq, Lkv].
    bool kept = dropout_keep(stream, static_cast<uint64_t>(row), 0.4);
    dropped += !kept;
    const double* v = t.v.data.data() + (row / 8) * 3;
    for (int64_t e = 0; e < 3; ++e)
      EXPECT_NEAR(g.out.data[row * 3 + e], kept ? v[e] / 0.6 : 0.0, 1e-15);
  }
  EXPECT_GT(dropped, 0);
  c.dropout_p = 0.0;
  EXPECT_NE(g.out.data, run(c, t).out.data);
}

}  // namespace
}  // namespace sdpa::test
