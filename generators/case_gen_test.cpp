#include "generators/case_gen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "harness/case/case_json.h"
#include "harness/case/case_validate.h"

namespace sdpa {
namespace {

Case draw(const rc::Gen<Case>& g, uint64_t seed, int size) {
  return g(rc::Random(seed), size).value();
}

CaseSpace restricted_space() {
  CaseSpace s;
  s.dtypes = {DType::f32};
  s.bshd_layout = false;
  s.dropout = false;
  s.masks = false;
  s.dynamic_dims = false;
  s.max_batch_rank = 0;
  s.grouped_heads = false;
  s.distinct_value_dim = false;
  s.causal = false;
  s.explicit_scale = false;
  return s;
}

CaseSpace causal_space() {
  CaseSpace s;
  s.causal_only = true;
  return s;
}

CaseSpace kv_cache_space() {
  CaseSpace s;
  s.dtypes = {DType::bf16, DType::i8};
  s.start_pos = true;
  s.max_batch_rank = 1;
  return s;
}

// A KV-cache step's space (CaseSpace::kv_cache): llm's sdpa-custom form.
CaseSpace decode_space() {
  CaseSpace s;
  s.dtypes = {DType::f32, DType::bf16};
  s.start_pos = s.kv_cache = true;
  s.causal_alignments = {CausalAlignment::start_pos};
  s.max_batch_rank = 1;
  s.batch_rank_weights = {0, 1};
  s.dropout = s.explicit_scale = s.distinct_value_dim = false;
  return s;
}

// Fails the test unless c lies inside what `space` lets the entry form take.
void expect_inside(const Case& c, const CaseSpace& space) {
  std::string json = case_to_json(c).dump();
  EXPECT_NO_THROW(validate_case(c)) << json;
  EXPECT_NE(std::find(space.dtypes.begin(), space.dtypes.end(), c.dtype), space.dtypes.end())
      << json;
  EXPECT_TRUE(space.bshd_layout || c.layout == Layout::bhsd) << json;
  EXPECT_TRUE(space.start_pos || c.start_pos == SymExpr(0)) << json;
  EXPECT_TRUE(space.dropout || c.dropout_p == 0.0) << json;
  EXPECT_TRUE(space.masks || !c.mask) << json;
  EXPECT_TRUE(space.dynamic_dims || c.symbols.empty()) << json;
  EXPECT_TRUE(space.grouped_heads || (c.kv_heads == c.q_heads && !c.enable_gqa)) << json;
  EXPECT_TRUE(space.distinct_value_dim || c.value_dim == c.head_dim) << json;
  EXPECT_TRUE(space.causal || !c.is_causal) << json;
  EXPECT_TRUE(space.explicit_scale || !c.scale) << json;
  EXPECT_LE(c.batch.size(), static_cast<size_t>(space.max_batch_rank)) << json;
  EXPECT_TRUE(space.non_finite || !c.data.special) << json;
  if (c.data.special && c.data.special->tensor == "mask") {
    EXPECT_TRUE(c.mask && c.mask->dtype != DType::b8) << json;
  }
  for (const auto& at : c.runs()) {
    const ConcreteSizes s = concrete_sizes(c, at);
    EXPECT_TRUE(space.empty || (s.batch_numel() > 0 && s.Lq > 0 && s.Lkv > 0)) << json;
  }
  EXPECT_LT(c.data.seed, uint64_t{1} << 53) << json;
  EXPECT_FALSE(c.mask && c.is_causal) << json;
  if (space.causal_only) {
    EXPECT_TRUE(c.is_causal || c.mask) << json;
    if (c.mask) {
      EXPECT_EQ(c.mask->pattern, MaskPattern::causal) << json;
      ASSERT_GE(c.mask->shape.size(), 2u) << json;
      EXPECT_EQ(c.mask->shape[c.mask->shape.size() - 2], c.q_len) << json;
      EXPECT_EQ(c.mask->shape.back(), c.kv_len) << json;
      EXPECT_TRUE(c.mask->dtype == DType::b8 || c.mask->fill == MaskFill::neg_inf) << json;
    }
  }
  for (const auto& at : c.runs()) {
    ConcreteSizes s = concrete_sizes(c, at);
    EXPECT_TRUE(s.start_pos == 0 || s.start_pos + s.Lq <= s.Lkv) << json;  // fits the KV cache
  }
  if (space.kv_cache) {  // a step at the symbol sp of a constant-length cache, causal unless masked
    EXPECT_EQ(c.start_pos, SymExpr::symbol("sp")) << json;
    EXPECT_TRUE(c.kv_len.is_constant()) << json;
    EXPECT_TRUE(c.is_causal != c.mask.has_value()) << json;
    EXPECT_TRUE(!c.is_causal || c.causal_alignment == CausalAlignment::start_pos) << json;
    const SymbolInfo& sp = c.symbols.at("sp");
    EXPECT_TRUE(sp.min == 0 && sp.max <= c.kv_len.constant() - 1) << json;
  }
}

class EveryDrawIsValid : public ::testing::TestWithParam<int> {};

TEST_P(EveryDrawIsValid, AcrossSizes) {
  CaseSpace edge = kv_cache_space(), causal_edge = causal_space(), decode_edge = decode_space();
  edge.non_finite = edge.empty = causal_edge.non_finite = causal_edge.empty = true;
  decode_edge.non_finite = decode_edge.empty = true;
  const std::vector<CaseSpace> spaces = {CaseSpace{}, restricted_space(), kv_cache_space(), causal_space(),
                                         edge, causal_edge, decode_space(), decode_edge};
  const CaseSpace& space = spaces[GetParam()];
  for (const GenPolicy& p : {GenPolicy::defaults(), GenPolicy::large()}) {
    auto g = gen_case(p, space);
    for (int size = 0; size <= 100; ++size)
      for (uint64_t seed = 0; seed < 20; ++seed)
        expect_inside(draw(g, seed * 101 + size, size), space);
  }
}

INSTANTIATE_TEST_SUITE_P(Spaces, EveryDrawIsValid, ::testing::Values(0, 1, 2, 3, 4, 5, 6, 7));

TEST(GenCase, RoundTripsThroughJson) {
  auto g = gen_case(GenPolicy::defaults(), kv_cache_space());
  auto h = gen_case(GenPolicy::defaults(), CaseSpace{});
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    for (const Case& c : {draw(g, seed, seed % 101), draw(h, seed, seed % 101)}) {
      std::string text = case_to_json(c).dump();
      Case back = case_from_json(nlohmann::json::parse(text));
      ASSERT_EQ(case_to_json(back).dump(), text);
    }
  }
}

TEST(GenCase, SizeZeroGivesTinyCases) {
  auto g = gen_case(GenPolicy::large(), CaseSpace{});
  for (uint64_t seed = 0; seed < 500; ++seed) {
    Case c = draw(g, seed, 0);
    for (const auto& at : c.runs()) {
      ConcreteSizes s = concrete_sizes(c, at);
      EXPECT_LE(std::max({s.Hq, s.Lq, s.Lkv, s.E, s.Ev}), 2) << case_summary(c);
      EXPECT_EQ(s.batch_numel(), 1) << case_summary(c);
    }
  }
}

TEST(GenCase, SizesStayUnderThePolicyCaps) {
  GenPolicy p = GenPolicy::defaults();
  auto g = gen_case(p, CaseSpace{});
  int64_t longest = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    Case c = draw(g, seed, 100);
    EXPECT_LE(c.q_heads, p.max_heads);
    EXPECT_LE(std::max(c.head_dim, c.value_dim), p.max_head_dim);
    for (const auto& at : c.runs()) {
      ConcreteSizes s = concrete_sizes(c, at);
      longest = std::max({longest, s.Lq, s.Lkv});
      EXPECT_LE(std::max(s.Lq, s.Lkv), p.max_len);
      for (int64_t b : s.batch) EXPECT_LE(b, p.max_batch);
    }
  }
  EXPECT_EQ(longest, p.max_len);
}

TEST(GenCase, DeterministicForTheSameRandomAndSize) {
  auto g = gen_case(GenPolicy::defaults(), kv_cache_space());
  int distinct = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const auto a = case_to_json(draw(g, seed, 60)).dump();
    EXPECT_EQ(a, case_to_json(draw(g, seed, 60)).dump());
    EXPECT_EQ(a,
              case_to_json(
                  gen_case(GenPolicy::defaults(), kv_cache_space())(rc::Random(seed), 60).value())
                  .dump());
    distinct += a != case_to_json(draw(g, seed + 1000, 60)).dump();
  }
  EXPECT_GT(distinct, 190);
}

// One generator serves every size (each size's generator is built once and
// kept): drawn at sizes in an order that visits each size many times, it
// gives at every draw what a generator never used before gives.
TEST(GenCase, AGeneratorUsedAtManySizesDrawsAsAFreshOne) {
  auto shared = gen_case(GenPolicy::defaults(), CaseSpace{});
  for (int i = 0; i < 300; ++i) {
    const int size = (i * 37) % 101;
    const uint64_t seed = 5000 + static_cast<uint64_t>(i);
    const auto fresh = gen_case(GenPolicy::defaults(), CaseSpace{});
    EXPECT_EQ(case_to_json(draw(shared, seed, size)).dump(), case_to_json(draw(fresh, seed, size)).dump())
        << "size " << size << ", seed " << seed;
  }
}

// The serving patterns, from fixed seeds under both policies, each in the
// serving shape: one head for all, Lkv whole, the batch dims of the call
// for per-batch padding; blocks from the policy's tiles; paddings cut to Lkv.
TEST(GenCase, ServingMasksAreDrawnInTheServingShape) {
  for (const GenPolicy& p : {GenPolicy::defaults(), GenPolicy::large()}) {
    auto g = gen_case(p, CaseSpace{});
    std::map<MaskPattern, int> drawn;
    for (uint64_t seed = 0; seed < 3000; ++seed) {
      const Case c = draw(g, seed, static_cast<int>(seed % 101));
      if (!c.mask) continue;
      const MaskSpec& m = *c.mask;
      const std::string json = case_to_json(c).dump();
      ++drawn[m.pattern];
      if (m.pattern != MaskPattern::left_padding && m.pattern != MaskPattern::per_batch_padding &&
          m.pattern != MaskPattern::block_sparse)
        continue;
      const SymShape scores = score_shape(c);
      const size_t r = m.shape.size(), full = scores.size();
      EXPECT_EQ(m.shape.back(), scores.back()) << json;
      if (r >= 3) {
        EXPECT_EQ(m.shape[r - 3], SymExpr(1)) << json;
      }
      if (m.pattern == MaskPattern::per_batch_padding) {
        ASSERT_EQ(r, full) << json;
        for (size_t i = 0; i + 3 < full; ++i) EXPECT_EQ(m.shape[i], scores[i]) << json;
      }
      if (m.pattern == MaskPattern::block_sparse) {
        if (r >= 2) {
          EXPECT_EQ(m.shape[r - 2], scores[full - 2]) << json;
        }
        EXPECT_TRUE(std::count_if(p.block_rows_weights.begin(), p.block_rows_weights.end(),
                                  [&](const auto& w) { return w.first == m.block_rows; }))
            << json;
        EXPECT_TRUE(std::count_if(p.block_keys_weights.begin(), p.block_keys_weights.end(),
                                  [&](const auto& w) { return w.first == m.block_keys; }))
            << json;
      } else {
        int64_t longest = 0;
        for (const auto& at : c.runs()) longest = std::max(longest, c.kv_len.eval(at));
        EXPECT_LE(m.param, static_cast<double>(std::max<int64_t>(longest, 1))) << json;
      }
    }
    for (MaskPattern pattern : {MaskPattern::left_padding, MaskPattern::per_batch_padding, MaskPattern::block_sparse})
      EXPECT_GT(drawn[pattern], 30) << pattern_name(pattern);
    // The other patterns are still drawn.
    for (MaskPattern pattern : {MaskPattern::random, MaskPattern::causal, MaskPattern::window, MaskPattern::padding,
                                MaskPattern::full_row, MaskPattern::keep_all})
      EXPECT_GT(drawn[pattern], 10) << pattern_name(pattern);
  }
}

// Long lengths past the size cap come only from size 50 on, only where
// every tensor still fits max_elements, and never under the defaults.
TEST(GenCase, LongLengthsOnlyFromMidSizesAndWhereTheyFit) {
  const GenPolicy p = GenPolicy::large();
  auto g = gen_case(p, CaseSpace{});
  std::map<int64_t, int> long_kv;
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    const int size = static_cast<int>(seed % 101);
    const Case c = draw(g, seed, size);
    for (const auto& at : c.runs()) {
      const ConcreteSizes s = concrete_sizes(c, at);
      if (std::max(s.Lq, s.Lkv) > 418) {  // the length cap at size 100
        EXPECT_GE(size, p.long_len_min_size) << case_summary(c);
        ++long_kv[s.Lkv];
      }
      double scores = static_cast<double>(s.batch_numel()) * static_cast<double>(s.Hq * s.Lq) * static_cast<double>(s.Lkv);
      EXPECT_LE(scores, static_cast<double>(p.max_elements)) << case_summary(c);
    }
  }
  for (int64_t len : {1023, 1024, 1025}) EXPECT_GT(long_kv[len], 20) << len;
  auto d = gen_case(GenPolicy::defaults(), CaseSpace{});
  for (uint64_t seed = 0; seed < 500; ++seed)
    for (const auto& at : draw(d, seed, 100).runs())
      EXPECT_LE(concrete_sizes(draw(d, seed, 100), at).Lkv, GenPolicy::defaults().max_len);
}

// A serving mask fires on top of a drawn one: with it off, the draw is
// the mask the policy gave before the serving patterns existed.
TEST(GenCase, WithoutServingMasksOrLongLengthsTheDrawsAreTheOlderOnes) {
  GenPolicy off = GenPolicy::large();
  off.p_serving_mask = 0;
  off.p_long_len = 0;
  auto with = gen_case(GenPolicy::large(), CaseSpace{}), without = gen_case(off, CaseSpace{});
  int same = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    const Case a = draw(with, seed, 80), b = draw(without, seed, 80);
    const bool serving = a.mask && (a.mask->pattern == MaskPattern::left_padding ||
                                    a.mask->pattern == MaskPattern::per_batch_padding ||
                                    a.mask->pattern == MaskPattern::block_sparse);
    const bool long_len = a.q_len != b.q_len || a.kv_len != b.kv_len;
    if (serving || long_len) continue;
    EXPECT_EQ(case_to_json(a).dump(), case_to_json(b).dump());
    ++same;
  }
  EXPECT_GT(same, 100);
}

// A kernel minimum (CaseSpace::kernel_min_pow2_head_dim, Triton's K >= 16)
// reaches every size: of the power-of-two head dims, about half are at
// least it at small sizes too, and the smaller ones are still drawn.
TEST(GenCase, AKernelMinimumHeadDimIsDrawnAtEverySizeBesideTheSmallerPowersOfTwo) {
  CaseSpace space;
  space.kernel_min_pow2_head_dim = 16;
  auto pow2 = [](int64_t d) { return (d & (d - 1)) == 0; };
  for (const GenPolicy& p : {GenPolicy::defaults(), GenPolicy::large()}) {
    auto g = gen_case(p, space);
    std::map<int64_t, int> at_least;  // per size band of 25: powers of two >= 16
    std::map<int64_t, int> below;
    for (int size = 0; size <= 100; ++size)
      for (uint64_t seed = 0; seed < 40; ++seed) {
        const Case c = draw(g, seed * 101 + size, size);
        EXPECT_LE(std::max(c.head_dim, c.value_dim), p.max_head_dim);
        if (pow2(c.head_dim)) ++(c.head_dim >= 16 ? at_least : below)[size / 25];
      }
    for (int64_t band = 0; band < 4; ++band) {
      const double share = static_cast<double>(at_least[band]) / (at_least[band] + below[band]);
      EXPECT_GT(share, 0.35) << "sizes " << band * 25 << " to " << band * 25 + 24;
      EXPECT_LT(share, 0.65) << "sizes " << band * 25 << " to " << band * 25 + 24;
    }
  }
}

// The kernel minimum moves the head dims only: every other part of a draw
// is that of the same space without it (at a size where the raised
// head-dim cap leaves the length cap, which divides the element budget by
// it, as it was).
TEST(GenCase, AKernelMinimumChangesTheHeadDimsOnly) {
  CaseSpace space;
  space.kernel_min_pow2_head_dim = 16;
  auto with = gen_case(GenPolicy::defaults(), space), without = gen_case(GenPolicy::defaults(), CaseSpace{});
  int moved = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    Case a = draw(with, seed, 40);
    const Case b = draw(without, seed, 40);
    moved += a.head_dim != b.head_dim;
    a.head_dim = b.head_dim;
    a.value_dim = b.value_dim;
    EXPECT_EQ(case_to_json(a).dump(), case_to_json(b).dump()) << seed;
  }
  EXPECT_GT(moved, 100);
}

TEST(GenCase, ShowsAsJson) {
  Case c = draw(gen_case(GenPolicy::defaults(), CaseSpace{}), 3, 50);
  EXPECT_EQ(rc::toString(c), case_to_json(c).dump());
}

}  // namespace
}  // namespace sdpa
