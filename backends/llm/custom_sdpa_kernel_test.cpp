// llama.custom_sdpa's model: which keys a call attends, its argument
// checks and their texts, its numerics, and zero-size dims.
#include "backends/llm/custom_sdpa_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace sdpa::llm {
namespace {

using namespace custom_sdpa_test;

TEST(CustomSdpa, WithoutAMaskKeysPastStartPosPlusLqAreCut) {
  Call c{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 5, 1, 1, kf), bshd(DType::f32, 5, 1, 1, vf)};
  Tensor out = run(c, Numerics::exact);
  std::vector<double> k{-0.5, -0.1, 0.3, 0.7, 1.1}, v{1, 2, 3, 4, 5};
  EXPECT_NEAR(out.data[0], attend(0.3, k, v, {0, 1}, 1.0), 1e-6);  // inputs are f32-rounded  // not keys 2..4
  EXPECT_NEAR(out.data[1], attend(0.5, k, v, {0, 1}, 1.0), 1e-6);  // inputs are f32-rounded
  EXPECT_GT(std::fabs(out.data[0] - attend(0.3, k, v, {0, 1, 2, 3, 4}, 1.0)), 0.1);
}

// has_attn_mask = has_value() && numel() > 0: a [0, Lkv] mask adds nothing,
// yet its presence turns truncation off, so all 5 keys are attended where
// no mask keeps 2 (WithoutAMaskKeysPastStartPosPlusLqAreCut).
// The schema's parameters after value are positional-or-keyword: passed by
// keyword, in any order, they mean what they mean by position.
TEST(CustomSdpa, StartPosMaskCausalAndScaleByKeywordMeanWhatTheyMeanByPosition) {
  Call masked{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 4, 1, 1, kf), bshd(DType::f32, 4, 1, 1, vf)};
  masked.mask = tensor(DType::f32, {2, 4}, {0, -INFINITY, 0, 0, 0, 0, -INFINITY, 0});
  masked.scale = 0.5;
  Call causal{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 5, 1, 1, kf), bshd(DType::f32, 5, 1, 1, vf)};
  causal.start_pos = 2;
  causal.causal = true;
  for (Call c : {masked, causal}) {
    const Tensor by_position = run(c, Numerics::exact);
    c.by_keyword = true;
    EXPECT_EQ(run(c, Numerics::exact).data, by_position.data);
  }
  Call cut = causal;  // start_pos matters: 0 cuts more keys
  cut.start_pos = 0;
  cut.by_keyword = true;
  EXPECT_NE(run(cut, Numerics::exact).data, run(causal, Numerics::exact).data);
}

TEST(CustomSdpa, AnEmptyMaskAttendsEveryKey) {
  Call c{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 5, 1, 1, kf), bshd(DType::f32, 5, 1, 1, vf),
         Tensor(DType::f32, {0, 5})};
  Tensor out = run(c, Numerics::exact);
  // softmax(q_i * k) . v over the 5 keys, from the f32-rounded inputs.
  EXPECT_DOUBLE_EQ(out.data[0], 3.238515153490163);
  EXPECT_DOUBLE_EQ(out.data[1], 3.393227972576076);
  c.mask.reset();
  Tensor cut = run(c, Numerics::exact);
  EXPECT_DOUBLE_EQ(cut.data[0], 1.5299640528410259);
  EXPECT_DOUBLE_EQ(cut.data[1], 1.5498339971280637);
  c.mask = Tensor(DType::f32, {0, 5});
  Tensor f32 = run(c);
  EXPECT_NEAR(f32.data[0], 3.238515153490163, 1e-6);
  EXPECT_NEAR(f32.data[1], 3.393227972576076, 1e-6);
}

TEST(CustomSdpa, CausalKeepsKeysUpToStartPosPlusRow) {
  Call c{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 4, 1, 1, kf), bshd(DType::f32, 4, 1, 1, vf)};
  c.causal = true;
  c.start_pos = 2;
  Tensor out = run(c, Numerics::exact);
  std::vector<double> k{-0.5, -0.1, 0.3, 0.7}, v{1, 2, 3, 4};
  EXPECT_NEAR(out.data[0], attend(0.3, k, v, {0, 1, 2}, 1.0), 1e-6);  // inputs are f32-rounded
  EXPECT_NEAR(out.data[1], attend(0.5, k, v, {0, 1, 2, 3}, 1.0), 1e-6);  // inputs are f32-rounded
  c.start_pos = 0;  // top-left: row 0 sees key 0 only
  EXPECT_NEAR(run(c, Numerics::exact).data[0], 1.0, 1e-12);
}

TEST(CustomSdpa, GqaMapsQueryHeadToHeadOverGroupSize) {
  // Hq 4, Hkv 2, one key: each output head equals the v of its kv head.
  Call c{bshd(DType::f32, 1, 4, 1, qf), bshd(DType::f32, 1, 2, 1, kf),
         bshd(DType::f32, 1, 2, 1, [](int64_t, int64_t h, int64_t) { return 10.0 + h; })};
  Tensor out = run(c);
  EXPECT_EQ(out.data, (std::vector<double>{10, 10, 11, 11}));
}

TEST(CustomSdpa, MaskContractMessages) {
  Tensor q = bshd(DType::f32, 3, 1, 1, qf), k = bshd(DType::f32, 3, 1, 1, kf), v = bshd(DType::f32, 3, 1, 1, vf);
  Call rank3{q, k, v, Tensor(DType::f32, {1, 3, 3})};
  EXPECT_EQ(error_of(rank3), std::make_pair(KernelError::Kind::recoverable,
                                            std::string("Attention mask must be a 2D tensor; Invalid arguments")));
  Call half{q, k, v, Tensor(DType::f16, {3, 3})};
  EXPECT_EQ(error_of(half).second, "Attention mask must be a Float tensor; Invalid arguments");
  Call broadcast_row{q, k, v, Tensor(DType::f32, {1, 3})};
  EXPECT_EQ(error_of(broadcast_row),
            std::make_pair(KernelError::Kind::fatal, std::string("attn_mask shape mismatchattn_mask.size(0)=1 qSize=3")));
  Call with_causal{q, k, v, Tensor(DType::f32, {3, 3})};
  with_causal.causal = true;
  EXPECT_EQ(error_of(with_causal).second, "attn_mask and is_causal cannot be set at the same time");
  Call beyond_cache{bshd(DType::f32, 4, 1, 1, qf), k, v};
  EXPECT_EQ(error_of(beyond_cache),
            std::make_pair(KernelError::Kind::fatal, std::string("num_keys_for_causal_attention must be <= kvSize")));
  Call head_dims{q, k, Tensor(DType::f32, {1, 3, 1, 2})};
  EXPECT_EQ(error_of(head_dims).second,
            "scaled_dot_product_attention_flash_attention: Q/K/V should have the same head size; Invalid arguments");
}

TEST(CustomSdpa, HeadCountChecksAreFatalWithTheUpstreamTexts) {
  auto one = [](int64_t, int64_t, int64_t) { return 1.0; };
  Call more_kv{bshd(DType::f32, 1, 1, 1, one), bshd(DType::f32, 1, 2, 1, one), bshd(DType::f32, 1, 2, 1, one)};
  EXPECT_EQ(error_of(more_kv),
            std::make_pair(KernelError::Kind::fatal,
                           std::string("FlashAttention does not support num kv heads > num query heads.Got num "
                                       "query heads=1 num key heads:2")));
  Call not_divisible{bshd(DType::f32, 1, 3, 1, one), bshd(DType::f32, 1, 2, 1, one),
                     bshd(DType::f32, 1, 2, 1, one)};
  EXPECT_EQ(error_of(not_divisible),
            std::make_pair(KernelError::Kind::fatal,
                           std::string("FlashAttention: num qyery heads must be divisible by num kv heads but got "
                                       "num query heads=3 and num kv heads=2")));
}

TEST(CustomSdpa, DtypeChecksAreRecoverableWithTheUpstreamTexts) {
  auto one = [](int64_t, int64_t, int64_t) { return 1.0; };
  Tensor f64 = bshd(DType::f64, 1, 1, 1, one), f32 = bshd(DType::f32, 1, 1, 1, one),
         bf16 = bshd(DType::bf16, 1, 1, 1, one);
  EXPECT_EQ(direct_error(f64, f64, f64),
            std::make_pair(KernelError::Kind::recoverable,
                           std::string("Query must be Float, Half, BFloat16, or Char type; Invalid arguments")));
  EXPECT_EQ(direct_error(f32, bf16, f32),
            std::make_pair(KernelError::Kind::recoverable,
                           std::string("Key and Value must have the same data type as Query; Invalid arguments")));
  EXPECT_EQ(direct_error(f32, f32, bf16).second,
            "Key and Value must have the same data type as Query; Invalid arguments");
  EXPECT_EQ(direct_error(f32, f32, f32).second, "no error");
}

TEST(CustomSdpa, DropoutIsIgnored) {
  Call c{bshd(DType::f32, 3, 1, 2, qf), bshd(DType::f32, 3, 1, 2, kf), bshd(DType::f32, 3, 1, 2, vf)};
  Tensor plain = run(c);
  c.dropout = 0.5;
  EXPECT_EQ(run(c).data, plain.data);
}

TEST(CustomSdpa, BlockwiseSoftmaxOverSeveralKvBlocksMatchesExact) {
  // 600 keys: two kv blocks of 512; 200 query rows: q blocks of 64.
  Call c{bshd(DType::f32, 200, 1, 4, [](int64_t s, int64_t, int64_t d) { return std::sin(0.1 * s + d); }),
         bshd(DType::f32, 600, 1, 4, [](int64_t s, int64_t, int64_t d) { return std::cos(0.07 * s - d); }),
         bshd(DType::f32, 600, 1, 4, [](int64_t s, int64_t, int64_t d) { return 0.01 * s - 0.1 * d; })};
  c.start_pos = 400;
  c.causal = true;
  Tensor got = run(c), exact = run(c, Numerics::exact);
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.data[i], exact.data[i], 1e-5);
  EXPECT_EQ(q_split_size(200), 64);
  EXPECT_EQ(q_split_size(800), 256);
}

TEST(CustomSdpa, QSplitSizeChangesAt192And768) {
  EXPECT_EQ(q_split_size(1), 32);
  EXPECT_EQ(q_split_size(191), 32);
  EXPECT_EQ(q_split_size(192), 64);
  EXPECT_EQ(q_split_size(767), 64);
  EXPECT_EQ(q_split_size(768), 256);
}

TEST(CustomSdpa, Bf16RoundsPBeforePV) {
  // Scores 0 and -0.1001: P = (1, exp(-0.1001) = 0.90475), which bf16
  // rounds to 0.90625 before P @ V; the sum stays f32. With v = (0, 1) the
  // output is 0.90625 / 1.90475 = 0.47578 -> bf16 0.4765625, where the
  // unrounded P gives 0.47500 -> bf16 0.474609375.
  Call c{bshd(DType::bf16, 1, 1, 1, [](int64_t, int64_t, int64_t) { return 1.0; }),
         bshd(DType::bf16, 2, 1, 1, [](int64_t s, int64_t, int64_t) { return s == 0 ? 0.0 : -0.1; }),
         bshd(DType::bf16, 2, 1, 1, [](int64_t s, int64_t, int64_t) { return s == 0 ? 0.0 : 1.0; })};
  c.mask = Tensor(DType::f32, {1, 2});  // keeps both keys: no truncation to start_pos + Lq
  EXPECT_EQ(run(c).data[0], 0.4765625);
  EXPECT_EQ(round_to(DType::bf16, run(c, Numerics::exact).data[0]), 0.474609375);
}

TEST(CustomSdpa, F16RoundsPBeforePV) {
  // k1 = f16(-0.016) = -0.0160064697265625: P = (1, exp(k1) = 0.98412097),
  // which f16 rounds to 0.98388671875 before P @ V; the sum stays f32
  // (1.98412097). With v = (0, 1) the output is f16 0.495849609375, where
  // the unrounded P gives 0.49609375. (k1 = -0.1 gives 0.47509765625 both
  // ways, so it cannot tell them apart.)
  Call c{bshd(DType::f16, 1, 1, 1, [](int64_t, int64_t, int64_t) { return 1.0; }),
         bshd(DType::f16, 2, 1, 1, [](int64_t s, int64_t, int64_t) { return s == 0 ? 0.0 : -0.016; }),
         bshd(DType::f16, 2, 1, 1, [](int64_t s, int64_t, int64_t) { return s == 0 ? 0.0 : 1.0; })};
  ASSERT_EQ(c.k.data[1], -0.0160064697265625);
  c.mask = Tensor(DType::f32, {1, 2});  // keeps both keys: no truncation to start_pos + Lq
  EXPECT_EQ(run(c).data[0], 0.495849609375);
  EXPECT_EQ(round_to(DType::f16, run(c, Numerics::exact).data[0]), 0.49609375);
}

TEST(CustomSdpa, QueryLengthZeroDiesDividingByQSplitSize) {
  Call c{Tensor(DType::f32, {1, 0, 1, 1}), bshd(DType::f32, 3, 1, 1, kf), bshd(DType::f32, 3, 1, 1, vf)};
  for (bool masked : {false, true}) {
    if (masked) c.mask = Tensor(DType::f32, {0, 3});
    try {
      run(c);
      ADD_FAILURE() << "no error, masked " << masked;
    } catch (const KernelError& e) {
      EXPECT_EQ(e.kind, KernelError::Kind::fatal);
      EXPECT_NE(std::string(e.what()).find("SIGFPE (integer divide by zero)"), std::string::npos) << e.what();
    }
  }
}

TEST(CustomSdpa, EmptyBatchAndKeysFollowUpstream) {
  // B = 0: nothing to compute, an empty output.
  Call b0{Tensor(DType::f32, {0, 2, 1, 1}), Tensor(DType::f32, {0, 2, 1, 1}), Tensor(DType::f32, {0, 2, 1, 1})};
  EXPECT_EQ(run(b0).shape, (Shape{0, 2, 1, 1}));
  // Lkv = 0 with a [Lq, 0] mask: no key block, sum 0, 0 * (1 / 0) = NaN.
  Call kv0{bshd(DType::f32, 2, 1, 1, qf), Tensor(DType::f32, {1, 0, 1, 1}), Tensor(DType::f32, {1, 0, 1, 1}),
           Tensor(DType::f32, {2, 0})};
  Tensor out = run(kv0);
  EXPECT_TRUE(std::isnan(out.data[0]) && std::isnan(out.data[1]));
}

}  // namespace
}  // namespace sdpa::llm
