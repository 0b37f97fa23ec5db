#include <gtest/gtest.h>

#include "generators/case_gen.h"
#include "harness/case/case_json.h"

namespace sdpa {
namespace {

ConcreteSizes first_run(const Case& c) { return concrete_sizes(c, c.runs().front()); }

TEST(Shrinking, ReachesTheSmallestCaseThatStillFails) {
  auto pred = [](const Case& c) { return c.q_heads > 1 && first_run(c).Lkv > 3; };
  int tried = 0;
  for (uint64_t seed = 0; tried < 40; ++seed) {
    auto s = gen_case(GenPolicy::defaults(), CaseSpace{})(rc::Random(seed), 100);
    if (!pred(s.value())) continue;
    ++tried;
    const Case original = s.value();
    const Case min = rc::shrinkable::findLocalMin(s, pred).first;
    const std::string json = case_to_json(min).dump();
    EXPECT_EQ(min.q_heads, 2) << json;
    EXPECT_EQ(first_run(min).Lkv, 4) << json;
    EXPECT_FALSE(min.mask) << json;
    EXPECT_EQ(first_run(min).batch_numel(), 1) << json;
    EXPECT_FALSE(min.is_causal) << json;
    EXPECT_EQ(min.dropout_p, 0.0) << json;
    EXPECT_FALSE(min.scale) << json;
    EXPECT_EQ(min.data.distribution, Distribution::normal) << json;
    EXPECT_EQ(min.data.seed, original.data.seed) << json;
  }
}

// Special values and empty dims shrink away when the failure does not need
// them, and toward one NaN in q when it needs only a special value.
TEST(Shrinking, SpecialValuesAndEmptyDimsShrinkTowardFiniteNonEmptyData) {
  GenPolicy p = GenPolicy::defaults();
  p.p_special = 0.5;
  p.p_empty = 0.5;
  CaseSpace space;
  space.non_finite = space.empty = true;
  int tried = 0;
  for (uint64_t seed = 0; tried < 20; ++seed) {
    auto s = gen_case(p, space)(rc::Random(seed), 100);
    const Case& c = s.value();
    const ConcreteSizes z = first_run(c);
    if (!c.data.special || c.q_heads < 2 || z.Lq == 0 || z.Lkv == 0 || z.batch_numel() == 0) continue;
    ++tried;
    const Case heads = rc::shrinkable::findLocalMin(s, [](const Case& x) { return x.q_heads > 1; }).first;
    EXPECT_FALSE(heads.data.special) << case_to_json(heads).dump();
    const Case special = rc::shrinkable::findLocalMin(s, [](const Case& x) { return x.data.special.has_value(); }).first;
    ASSERT_TRUE(special.data.special);
    EXPECT_EQ(special.data.special->value, SpecialValue::nan) << case_to_json(special).dump();
    EXPECT_EQ(special.data.special->tensor, "q") << case_to_json(special).dump();
    EXPECT_EQ(special.data.special->count, 1) << case_to_json(special).dump();
    EXPECT_GT(first_run(special).Lq, 0) << case_to_json(special).dump();
  }
}

TEST(Shrinking, PredicateOnHeadsAloneShrinksEverythingElse) {
  CaseSpace space;
  space.start_pos = true;
  int tried = 0;
  for (uint64_t seed = 0; tried < 40; ++seed) {
    auto s = gen_case(GenPolicy::defaults(), space)(rc::Random(seed), 100);
    if (s.value().q_heads < 2) continue;
    ++tried;
    const Case min =
        rc::shrinkable::findLocalMin(s, [](const Case& c) { return c.q_heads > 1; }).first;
    const std::string json = case_to_json(min).dump();
    EXPECT_EQ(min.q_heads, 2) << json;
    EXPECT_EQ(min.dtype, space.dtypes.front()) << json;
    EXPECT_EQ(min.layout, Layout::bhsd) << json;
    EXPECT_TRUE(min.batch.empty()) << json;
    EXPECT_EQ(min.q_len, SymExpr(1)) << json;
    EXPECT_EQ(min.kv_len, SymExpr(1)) << json;
    EXPECT_EQ(min.head_dim, 1) << json;
    EXPECT_EQ(min.value_dim, 1) << json;
    EXPECT_TRUE(min.symbols.empty()) << json;
    EXPECT_TRUE(min.runtime.empty()) << json;
    EXPECT_EQ(min.start_pos, SymExpr(0)) << json;
    EXPECT_FALSE(min.mask || min.is_causal || min.scale || min.dropout_p > 0) << json;
    EXPECT_EQ(min.data.magnitude, 1.0) << json;
    EXPECT_EQ(min.data.seed, s.value().data.seed) << json;
  }
}

TEST(Shrinking, MaskShrinksToTwoDimsOverLqLkv) {
  auto has_mask = [](const Case& c) { return c.mask.has_value(); };
  int tried = 0;
  for (uint64_t seed = 0; tried < 20; ++seed) {
    auto s = gen_case(GenPolicy::defaults(), CaseSpace{})(rc::Random(seed), 100);
    if (!has_mask(s.value())) continue;
    ++tried;
    const Case min = rc::shrinkable::findLocalMin(s, has_mask).first;
    const std::string json = case_to_json(min).dump();
    ASSERT_TRUE(min.mask) << json;
    EXPECT_EQ(min.mask->dtype, DType::b8) << json;
    EXPECT_EQ(min.mask->pattern, MaskPattern::keep_all) << json;
    EXPECT_EQ(min.mask->shape, (SymShape{min.q_len, min.kv_len})) << json;
  }
}

// A failure that needs only a block-sparse mask shrinks to the simplest
// one: a bool [Lq, Lkv] mask of 1 x 1, the first block sizes and keep
// probability of the policy's lists.
TEST(Shrinking, ServingMasksShrinkTowardTheirSimplestForm) {
  const GenPolicy p = GenPolicy::large();
  for (MaskPattern pattern : {MaskPattern::block_sparse, MaskPattern::left_padding, MaskPattern::per_batch_padding}) {
    auto needs = [pattern](const Case& c) { return c.mask && c.mask->pattern == pattern; };
    int tried = 0;
    for (uint64_t seed = 0; tried < 10 && seed < 5000; ++seed) {
      auto s = gen_case(p, CaseSpace{})(rc::Random(seed), 100);
      if (!needs(s.value())) continue;
      ++tried;
      const Case min = rc::shrinkable::findLocalMin(s, needs).first;
      const std::string json = case_to_json(min).dump();
      ASSERT_TRUE(min.mask) << json;
      EXPECT_EQ(min.mask->dtype, DType::b8) << json;
      EXPECT_EQ(first_run(min).Lq, 1) << json;
      EXPECT_EQ(first_run(min).Lkv, 1) << json;
      EXPECT_EQ(min.q_heads, 1) << json;
      EXPECT_EQ(min.mask->param, pattern == MaskPattern::block_sparse ? p.mask_keep_weights[0].first : 0.0) << json;
      if (pattern == MaskPattern::block_sparse) {
        EXPECT_EQ(min.mask->block_rows, p.block_rows_weights[0].first) << json;
        EXPECT_EQ(min.mask->block_keys, p.block_keys_weights[0].first) << json;
        EXPECT_EQ(min.mask->shape, (SymShape{1, 1})) << json;
      }
    }
    EXPECT_EQ(tried, 10) << pattern_name(pattern);
  }
}

// A failure that needs a left padding that empties a whole 64-key tile of
// a row that keeps other keys shrinks to the edge: Lkv 65, padding 64.
TEST(Shrinking, ATileEmptyingPaddingShrinksToTheTileEdge) {
  const GenPolicy p = GenPolicy::large();
  auto needs = [](const Case& c) {
    if (!c.mask || c.mask->pattern != MaskPattern::left_padding) return false;
    const ConcreteSizes s = first_run(c);
    return s.mask_shape.back() == s.Lkv && c.mask->param >= 64 && c.mask->param < static_cast<double>(s.Lkv);
  };
  int tried = 0;
  for (uint64_t seed = 0; tried < 5 && seed < 20000; ++seed) {
    auto s = gen_case(p, CaseSpace{})(rc::Random(seed), 100);
    if (!needs(s.value())) continue;
    ++tried;
    const Case min = rc::shrinkable::findLocalMin(s, needs).first;
    const std::string json = case_to_json(min).dump();
    EXPECT_EQ(first_run(min).Lkv, 65) << json;
    EXPECT_EQ(min.mask->param, 64) << json;
    EXPECT_EQ(first_run(min).Lq, 1) << json;
  }
  EXPECT_EQ(tried, 5);
}

}  // namespace
}  // namespace sdpa
