// llama.custom_sdpa's model on rows that meet -inf, NaN or inf: fully
// masked rows, row sums carried between query blocks, the row max that
// drops a NaN, skipped kv blocks, and the fault that hides NaN.
#include "backends/llm/custom_sdpa_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace sdpa::llm {
namespace {

using namespace custom_sdpa_test;

TEST(CustomSdpa, FullyMaskedRowIsNan) {
  Tensor q = bshd(DType::f32, 2, 1, 1, qf), k = bshd(DType::f32, 3, 1, 1, kf), v = bshd(DType::f32, 3, 1, 1, vf);
  Tensor mask = tensor(DType::f32, {2, 3}, {0, 0, 0, -INFINITY, -INFINITY, -INFINITY});
  Tensor out = run({q, k, v, mask});
  EXPECT_TRUE(std::isfinite(out.data[0]));
  EXPECT_TRUE(std::isnan(out.data[1]));
}

// Lq = 33: query blocks [0, 32) and [32, 33), which one thread runs in turn
// on one scratch. Row 32 has every key masked, row 0 none: the kv block is
// skipped for row 32 (max and sum stay), and qk_sum_data still holds row
// 0's sum, so row 32 is 0 * V / sum = 0. With two threads each block has
// its own zeroed scratch: 0 * (1 / 0) = NaN.
TEST(CustomSdpa, AFullyMaskedRowKeepsTheSumThePreviousQueryBlockLeft) {
  const Call c = row_32_masked(33);
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    EXPECT_EQ(run(c, n, {}, 1).data[32], 0.0);
    EXPECT_TRUE(std::isnan(run(c, n, {}, 2).data[32]));
    EXPECT_TRUE(std::isfinite(run(c, n, {}, 2).data[0]));
  }
}

// Two heads, Lq = 1, a zero mask: head 0's q is NaN, so its masked row max
// is NaN and so is its row sum. Head 1 is clean, but on one thread it
// inherits the NaN sum: the first block's rescale exp(-inf - max) = 0
// times NaN is NaN, and so is the row. On two threads it is finite.
TEST(CustomSdpa, ANanRowSumReachesTheSameRowOfTheThreadsNextHead) {
  Call c{bshd(DType::f32, 1, 2, 1, [](int64_t, int64_t h, int64_t) { return h == 0 ? NAN : 0.5; }),
         bshd(DType::f32, 3, 2, 1, kf), bshd(DType::f32, 3, 2, 1, vf)};
  c.mask = Tensor(DType::f32, {1, 3});
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    EXPECT_TRUE(std::isnan(run(c, n, {}, 1).data[1]));
    Tensor apart = run(c, n, {}, 2);
    EXPECT_TRUE(std::isnan(apart.data[0]));
    EXPECT_TRUE(std::isfinite(apart.data[1]));
  }
}

// Batch 2 of one head, Lq = 1, no mask: batch 1's q is NaN. Its unmasked
// row max drops the NaN (three keys: all in the scalar tail), so the block
// is skipped; on one thread the row keeps batch 0's sum and comes out 0,
// finite where aten is NaN. On two threads: 0 * (1 / 0) = NaN.
TEST(CustomSdpa, ASkippedNanRowAfterAnotherBlockComesOutZero) {
  Tensor q(DType::f32, {2, 1, 1, 1});
  q.data = {0.5, NAN};
  Tensor k(DType::f32, {2, 3, 1, 1}), v(DType::f32, {2, 3, 1, 1});
  for (int64_t i = 0; i < 6; ++i) {
    k.data[i] = 0.1 * i;
    v.data[i] = 1.0 + i;
  }
  Call c{q, k, v};
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    EXPECT_EQ(run(c, n, {}, 1).data[1], 0.0);
    EXPECT_TRUE(std::isnan(run(c, n, {}, 2).data[1]));
  }
}

// parallel_for gives task t the items [t * chunk, (t + 1) * chunk), chunk =
// ceil(items / threads): with 4 heads on 2 threads, heads 0-1 share one
// scratch and heads 2-3 the other. A NaN row sum in head 0 reaches head 1
// but not heads 2 and 3; in head 2 it reaches head 3 only.
TEST(CustomSdpa, ThreadsShareScratchInContiguousChunks) {
  for (int64_t nan_head : {0, 2}) {
    Call c{bshd(DType::f32, 1, 4, 1, [](int64_t, int64_t, int64_t) { return 0.5; }), bshd(DType::f32, 3, 4, 1, kf),
           bshd(DType::f32, 3, 4, 1, vf)};
    c.q.data[nan_head] = NAN;
    c.mask = Tensor(DType::f32, {1, 3});
    Tensor out = run(c, Numerics::emulated, {}, 2);
    for (int64_t h = 0; h < 4; ++h)
      EXPECT_EQ(std::isnan(out.data[h]), h == nan_head || h == nan_head + 1)
          << "NaN head " << nan_head << ", head " << h;
  }
}

TEST(CustomSdpa, CausalFillIsScaledSoScaleZeroGivesNan) {
  Call c{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 2, 1, 1, kf), bshd(DType::f32, 2, 1, 1, vf)};
  c.causal = true;
  c.scale = 0.0;
  Tensor out = run(c);
  EXPECT_TRUE(std::isnan(out.data[0]));  // -inf * 0 in row 0
  EXPECT_NEAR(out.data[1], 1.5, 1e-6);   // row 1 masks nothing: uniform weights
}

TEST(CustomSdpa, CausalWithANegativeScaleTurnsTheFillIntoPlusInfSoTheRowIsNan) {
  Call c{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 2, 1, 1, kf), bshd(DType::f32, 2, 1, 1, vf)};
  c.causal = true;
  c.scale = -0.5;
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    Tensor out = run(c, n);
    EXPECT_TRUE(std::isnan(out.data[0]));  // -inf * -0.5 = +inf is the max: exp(inf - inf); aten: 1.0
    // Row 1 masks nothing: softmax(0.125, 0.025) . (1, 2).
    EXPECT_NEAR(out.data[1], 1.4750208125210602, 1e-6);
  }
}

TEST(CustomSdpa, UnmaskedRowMaxDropsANanOfTheVectorLanesSoTheBlockIsSkipped) {
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    Tensor out = run(nan_in_first_block(3), n);
    EXPECT_EQ(out.data[0], 515.5);
    EXPECT_EQ(out.data[519], 515.5);
  }
}

TEST(CustomSdpa, AMaskedRowMaxPropagatesTheNan) {
  Call c = nan_in_first_block(3);
  c.mask = Tensor(DType::f32, {520, 520});  // all 0: keeps every key
  Tensor out = run(c);
  EXPECT_TRUE(std::isnan(out.data[0]));
  EXPECT_TRUE(std::isnan(out.data[519]));
}

TEST(CustomSdpa, ANanInTheScalarTailIsDroppedButStillReachesExp) {
  // 10 keys, one block: lanes 0-7 vector, 8-9 the tail. NaN at key 9: the
  // max is taken over the others, then exp(NaN - max) makes the sum NaN.
  Call c{bshd(DType::f32, 10, 1, 1, [](int64_t, int64_t, int64_t) { return 1.0; }),
         bshd(DType::f32, 10, 1, 1, [](int64_t, int64_t, int64_t) { return 0.0; }),
         bshd(DType::f32, 10, 1, 1, [](int64_t s, int64_t, int64_t) { return static_cast<double>(s); })};
  c.k.data[9] = std::nan("");
  EXPECT_TRUE(std::isnan(run(c).data[0]));
}

TEST(CustomSdpa, ASkippedBlockStillMultipliesZeroIntoV) {
  // One query row, 520 keys: the mask drops block 0 ([0, 512)) and keeps
  // block 1, v[j] = j. Block 0 is skipped, yet its P @ V adds 0 * v: with
  // v[3] = inf the row is NaN (aten: weight 0 * inf = NaN as well); with v
  // finite it averages block 1: 515.5.
  Call c{bshd(DType::f32, 1, 1, 1, [](int64_t, int64_t, int64_t) { return 1.0; }),
         bshd(DType::f32, 520, 1, 1, [](int64_t, int64_t, int64_t) { return 0.0; }),
         bshd(DType::f32, 520, 1, 1, [](int64_t s, int64_t, int64_t) { return static_cast<double>(s); })};
  Tensor mask(DType::f32, {1, 520});
  for (int64_t j = 0; j < 512; ++j) mask.data[j] = -INFINITY;
  c.mask = mask;
  EXPECT_EQ(run(c).data[0], 515.5);
  c.v.data[3] = INFINITY;
  EXPECT_TRUE(std::isnan(run(c).data[0]));
  EXPECT_TRUE(std::isnan(run(c, Numerics::exact).data[0]));
}

// The masks of batched serving empty whole kv blocks: a left padding over
// block 0 skips it (m_new = -inf: max and sum stay, P @ V adds 0 * V), a
// right padding over block 1 meets a finite row max (p = 0, the rescale
// exp(0) = 1). Either way the rows equal the call on the live block's keys
// alone, bit for bit (f32 and bf16, -inf and lowest-f32 fills).
TEST(CustomSdpa, AKvBlockTheMaskEmptiesLeavesTheOtherBlocksResult) {
  const int64_t Lq = 3, block = 512;
  auto qv = [](int64_t s, int64_t, int64_t d) { return std::sin(0.7 * s + d); };
  auto kv = [](int64_t s, int64_t, int64_t d) { return std::cos(0.05 * s - d); };
  auto vv = [](int64_t s, int64_t, int64_t d) { return 0.01 * s - 0.3 * d; };
  for (DType t : {DType::f32, DType::bf16})
    for (double fill : {-static_cast<double>(INFINITY), lowest(DType::f32)})
      for (bool left : {true, false}) {
        Call whole{bshd(t, Lq, 1, 2, qv), bshd(t, 2 * block, 1, 2, kv), bshd(t, 2 * block, 1, 2, vv)};
        Tensor mask(DType::f32, {Lq, 2 * block});
        for (int64_t i = 0; i < Lq; ++i)
          for (int64_t j = 0; j < 2 * block; ++j) mask.data[i * 2 * block + j] = (j < block) == left ? fill : 0.0;
        whole.mask = mask;
        Call live{whole.q, Tensor(t, {1, block, 1, 2}), Tensor(t, {1, block, 1, 2}), Tensor(DType::f32, {Lq, block})};
        const int64_t from = left ? block : 0;
        std::copy_n(whole.k.data.begin() + from * 2, block * 2, live.k.data.begin());
        std::copy_n(whole.v.data.begin() + from * 2, block * 2, live.v.data.begin());
        for (Numerics n : {Numerics::emulated, Numerics::exact})
          EXPECT_EQ(run(whole, n).data, run(live, n).data)
              << dtype_name(t) << " fill " << fill << (left ? " left" : " right") << " padding";
      }
}

TEST(CustomSdpa, AnInfScoreGivesNanAsInAten) {
  // k[1] = inf: score +inf is the max, exp(inf - inf) = NaN.
  Call c{bshd(DType::f32, 2, 1, 1, qf), bshd(DType::f32, 2, 1, 1, kf), bshd(DType::f32, 2, 1, 1, vf)};
  c.k.data[1] = INFINITY;
  Tensor out = run(c);
  EXPECT_TRUE(std::isnan(out.data[0]));
  EXPECT_TRUE(std::isnan(out.data[1]));
}

TEST(CustomSdpa, TheNanToZeroFaultRewritesNanOutputs) {
  Tensor q = bshd(DType::f32, 2, 1, 1, qf), k = bshd(DType::f32, 3, 1, 1, kf), v = bshd(DType::f32, 3, 1, 1, vf);
  Graph g;
  ValueRef qr = g.placeholder("q", {DType::f32, sym(q.shape)});
  ValueRef kr = g.placeholder("k", {DType::f32, sym(k.shape)});
  ValueRef vr = g.placeholder("v", {DType::f32, sym(v.shape)});
  ValueRef mr = g.placeholder("mask", {DType::f32, {2, 3}});
  g.outputs = {g.call(kCustomSdpaOp, {qr, kr, vr, int64_t{0}, mr, 0.0, false, None{}}, {}, {{DType::f32, sym(q.shape)}})};
  KernelSet ks("t");
  ks.add(kCustomSdpaOp, custom_sdpa_kernel(Numerics::emulated, {DType::f32, true}));
  Tensor mask = tensor(DType::f32, {2, 3}, {0, 0, 0, -INFINITY, -INFINITY, -INFINITY});
  Tensor out = interpret(g, ks, {{"q", q}, {"k", k}, {"v", v}, {"mask", mask}}, {}).outputs[0];
  EXPECT_TRUE(std::isfinite(out.data[0]));
  EXPECT_EQ(out.data[1], 0.0);  // upstream: NaN (FullyMaskedRowIsNan)
}

}  // namespace
}  // namespace sdpa::llm
