#include "harness/case/tensor_data.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace sdpa {
namespace {

Case small_case() {
  Case c;
  c.batch = {SymExpr(2)};
  c.q_heads = 2;
  c.kv_heads = 2;
  c.q_len = 3;
  c.kv_len = 4;
  c.head_dim = 5;
  c.value_dim = 5;
  c.data.seed = 7;
  return c;
}

TEST(CounterStream, ElementsArePureFunctionsOfSeedNameIndex) {
  CounterStream a(7, "q"), b(7, "q"), other(7, "k"), reseeded(8, "q");
  EXPECT_EQ(a.bits(12), b.bits(12));
  EXPECT_NE(a.bits(12), other.bits(12));
  EXPECT_NE(a.bits(12), reseeded.bits(12));
  // Known value: keeps the Python rebuild (README) in step with this code.
  EXPECT_EQ(CounterStream(42, "q").bits(0), splitmix64_mix(splitmix64_mix(42 ^ fnv1a64("q")) + 0x9e3779b97f4a7c15ULL));
  for (int i = 0; i < 100; ++i) {
    double u = a.uniform01(i);
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

// Values computed by the Python rebuild in the README: keeps the two in step.
TEST(CounterStream, MatchesThePythonRebuild) {
  EXPECT_EQ(CounterStream(42, "q").bits(0), 2946435179081985290ULL);
  EXPECT_EQ(CounterStream(42, "q").uniform01(5), 0.04970953885017415);
  EXPECT_NEAR(CounterStream(42, "v").normal(3), -0.514746625669289, 1e-15);
}

TEST(TensorData, IntegersMakeScoresExactInF32) {
  Case c = small_case();
  c.data.distribution = Distribution::integers;
  c.data.magnitude = 3;
  CaseTensors t = make_case_tensors(c, {});
  for (double x : t.q.data) {
    EXPECT_EQ(x, std::floor(x));
    EXPECT_LE(std::fabs(x), 3.0);
  }
}

TEST(TensorData, BshdHoldsTheSameLogicalTensor) {
  Case c = small_case();
  CaseTensors bhsd = make_case_tensors(c, {});
  c.layout = Layout::bshd;
  CaseTensors bshd = make_case_tensors(c, {});
  EXPECT_EQ(bshd.q.shape, (Shape{2, 3, 2, 5}));
  EXPECT_EQ(swap_heads_and_seq(bshd.q).data, bhsd.q.data);
}

TEST(TensorData, ValuesAreRoundedToTheCaseDtype) {
  Case c = small_case();
  c.dtype = DType::bf16;
  CaseTensors t = make_case_tensors(c, {});
  for (double x : t.k.data) EXPECT_EQ(x, round_to(DType::bf16, x));
}

TEST(TensorData, MaskPatterns) {
  Case c = small_case();
  c.mask = MaskSpec{DType::b8, {SymExpr(3), SymExpr(4)}, MaskPattern::causal, 0, MaskFill::neg_inf};
  Tensor causal = make_mask(c, {3, 4});
  EXPECT_EQ(causal.data, (std::vector<double>{1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0}));
  c.mask->pattern = MaskPattern::padding;
  c.mask->param = 2;
  c.mask->dtype = DType::f32;
  c.mask->fill = MaskFill::neg_1e4;
  Tensor pad = make_mask(c, {3, 4});
  EXPECT_EQ(pad.data[0], 0.0);
  EXPECT_EQ(pad.data[2], -1e4);
  c.mask->pattern = MaskPattern::full_row;
  c.mask->param = 1.0;
  c.mask->dtype = DType::f16;
  c.mask->fill = MaskFill::min;
  Tensor full = make_mask(c, {3, 4});
  int dropped_rows = 0;
  for (int i = 0; i < 3; ++i) {
    bool all = true;
    for (int j = 0; j < 4; ++j) all = all && full.data[i * 4 + j] == -65504.0;
    dropped_rows += all;
  }
  EXPECT_EQ(dropped_rows, 1);
}

std::vector<double> keeps_of(const Case& c, const Shape& shape) {
  std::vector<double> out;
  for (bool k : mask_keeps(c, shape)) out.push_back(k ? 1.0 : 0.0);
  return out;
}

TEST(TensorData, LeftPaddingDropsTheFirstParamKeysOfEveryRow) {
  Case c = small_case();
  c.mask = MaskSpec{DType::b8, {SymExpr(3), SymExpr(5)}, MaskPattern::left_padding, 2, MaskFill::neg_inf};
  EXPECT_EQ(make_mask(c, {3, 5}).data, (std::vector<double>{0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1}));
  c.mask->param = 0;
  for (double x : make_mask(c, {3, 5}).data) EXPECT_EQ(x, 1.0);
  c.mask->param = 5;  // every key padded: every row fully masked
  c.mask->dtype = DType::f32;
  for (double x : make_mask(c, {3, 5}).data) EXPECT_EQ(x, -INFINITY);
}

// Pads from the Python rebuild: bits(7, "mask_lengths", b) % 5 is 4, 2, 4, 2
// for b = 0..3, and % 7 is 2, 4, ...: element b keeps j < Lkv - pad.
TEST(TensorData, PerBatchPaddingGivesEachBatchElementItsOwnLength) {
  Case c = small_case();
  c.mask = MaskSpec{DType::b8, {2, 1, 1, 6}, MaskPattern::per_batch_padding, 4, MaskFill::neg_inf};
  EXPECT_EQ(keeps_of(c, {2, 1, 1, 6}), (std::vector<double>{1, 1, 0, 0, 0, 0,  //
                                                             1, 1, 1, 1, 0, 0}));
  for (uint64_t b = 0; b < 4; ++b)
    EXPECT_EQ(CounterStream(7, "mask_lengths").bits(b) % 5, (b % 2 == 0 ? 4u : 2u)) << b;
  // Every row and head of one batch element shares its length.
  c.mask->param = 6;
  EXPECT_EQ(keeps_of(c, {2, 1, 3, 6}), (std::vector<double>{1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0,  //
                                                             1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0}));
  // Two batch dims: the element counts over both.
  c.mask->param = 4;
  EXPECT_EQ(keeps_of(c, {2, 2, 1, 1, 6}), (std::vector<double>{1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0,  //
                                                                1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0}));
  // No batch dim in the mask: one length (element 0's) for every call in the batch.
  EXPECT_EQ(keeps_of(c, {2, 6}), (std::vector<double>{1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0}));
  c.mask->param = 0;  // no padding
  for (double x : keeps_of(c, {2, 1, 1, 6})) EXPECT_EQ(x, 1.0);
}

// Blocks from the Python rebuild: uniform01(7, "mask_blocks", k) for k = 0..7
// is 0.162, 0.126, 0.125, 0.221, 0.447, 0.063, 0.600, 0.367; with keep
// probability 0.2 blocks 0, 1, 2 and 5 are kept. Block k counts over
// (slice, row block, key block).
TEST(TensorData, BlockSparseKeepsOrDropsWholeBlocks) {
  Case c = small_case();
  c.mask = MaskSpec{DType::b8, {2, 4, 8}, MaskPattern::block_sparse, 0.2, MaskFill::neg_inf, 2, 4};
  const std::vector<double> K{1, 1, 1, 1}, D{0, 0, 0, 0};
  std::vector<double> want;
  auto row = [&](const std::vector<double>& a, const std::vector<double>& b) {
    want.insert(want.end(), a.begin(), a.end());
    want.insert(want.end(), b.begin(), b.end());
  };
  row(K, K), row(K, K), row(K, D), row(K, D);  // slice 0: blocks 0, 1 / 2, 3
  row(D, K), row(D, K), row(D, D), row(D, D);  // slice 1: blocks 4, 5 / 6, 7 (rows 2, 3 fully masked)
  EXPECT_EQ(keeps_of(c, {2, 4, 8}), want);
  EXPECT_LT(CounterStream(7, "mask_blocks").uniform01(5), 0.2);
  EXPECT_GT(CounterStream(7, "mask_blocks").uniform01(3), 0.2);
  // Partial blocks at the edges: rows [0, 2) and [2, 3), keys [0, 4) and [4, 6).
  c.mask->param = 0.2;
  EXPECT_EQ(keeps_of(c, {3, 6}), (std::vector<double>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}));
  // An additive mask writes the fill over dropped blocks.
  c.mask->dtype = DType::f32;
  c.mask->fill = MaskFill::neg_1e4;
  EXPECT_EQ(make_mask(c, {3, 6}).data[17], -1e4);
  EXPECT_EQ(make_mask(c, {3, 6}).data[0], 0.0);
}

TEST(TensorData, DropoutKeepsAboutOneMinusP) {
  CounterStream s(3, "dropout");
  int kept = 0;
  for (int i = 0; i < 10000; ++i) kept += dropout_keep(s, i, 0.25);
  EXPECT_NEAR(kept / 10000.0, 0.75, 0.02);
}

TEST(SpecialData, ElementsAndRowsLandWhereTheStreamSays) {
  Case c = small_case();
  const Shape shape{2, 2, 4, 5};
  Tensor plain = make_input(c, "k", shape);
  c.data.special = SpecialData{SpecialValue::nan, "k", SpecialPlace::elements, 2};
  Tensor t = make_input(c, "k", shape);
  const CounterStream s(c.data.seed, "special_k");
  std::set<int64_t> at{static_cast<int64_t>(s.bits(0) % 80), static_cast<int64_t>(s.bits(1) % 80)};
  for (int64_t i = 0; i < t.numel(); ++i)
    if (at.count(i)) EXPECT_TRUE(std::isnan(t.data[i])) << i;
    else EXPECT_EQ(t.data[i], plain.data[i]) << i;
  // Other tensors keep their data.
  EXPECT_EQ(make_input(c, "q", {2, 2, 3, 5}).data, make_input(small_case(), "q", {2, 2, 3, 5}).data);

  c.data.special = SpecialData{SpecialValue::neg_inf, "k", SpecialPlace::row, 1};
  t = make_input(c, "k", shape);
  const int64_t row = static_cast<int64_t>(s.bits(0) % 16);
  for (int64_t i = 0; i < t.numel(); ++i)
    if (i / 5 == row) EXPECT_EQ(t.data[i], -INFINITY) << i;
    else EXPECT_EQ(t.data[i], plain.data[i]) << i;
}

TEST(SpecialData, OverflowRoundsToInfinityInTheCaseDtypeHugeStaysFinite) {
  Case c = small_case();
  c.data.special = SpecialData{SpecialValue::overflow, "q", SpecialPlace::row, 64};
  for (DType d : {DType::f16, DType::bf16, DType::f32, DType::f64}) {
    c.dtype = d;
    EXPECT_EQ(round_to(d, special_value(SpecialValue::overflow, d)), INFINITY) << dtype_name(d);
    EXPECT_GT(special_value(SpecialValue::overflow, d), -lowest(d)) << dtype_name(d);
  }
  // 65504 + 32 = 2^16: past f16, finite in bf16, f32 and f64.
  EXPECT_EQ(special_value(SpecialValue::overflow, DType::f16), 65536.0);
  EXPECT_EQ(round_to(DType::bf16, 65536.0), 65536.0);
  // 65504 needs 11 significant bits: bf16 (8) rounds it to 65536, still finite.
  for (DType d : {DType::f16, DType::f32, DType::f64})
    EXPECT_EQ(round_to(d, special_value(SpecialValue::huge, d)), 65504.0) << dtype_name(d);
  EXPECT_EQ(round_to(DType::bf16, special_value(SpecialValue::huge, DType::bf16)), 65536.0);
}

TEST(SpecialData, AnAdditiveMaskTakesThemABoolMaskDoesNot) {
  Case c = small_case();
  c.mask = MaskSpec{DType::f32, {SymExpr(3), SymExpr(4)}, MaskPattern::keep_all, 0.0, MaskFill::neg_inf};
  c.data.special = SpecialData{SpecialValue::pos_inf, "mask", SpecialPlace::row, 1};
  Tensor m = make_mask(c, {3, 4});
  const int64_t row = static_cast<int64_t>(CounterStream(c.data.seed, "special_mask").bits(0) % 3);
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(m.data[i], i / 4 == row ? INFINITY : 0.0) << i;
  c.mask->dtype = DType::b8;
  for (double x : make_mask(c, {3, 4}).data) EXPECT_EQ(x, 1.0);
}

}  // namespace
}  // namespace sdpa
