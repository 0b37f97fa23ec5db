// llama.custom_sdpa's model at start_pos > 0 (a KV-cache step): the
// causal offset across query and kv blocks, and the two faults only it shows.
#include "backends/llm/custom_sdpa_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace sdpa::llm {
namespace {

using namespace custom_sdpa_test;

// A KV-cache step, E = 1: q = 0, so every kept key weighs the same and a
// row's output is the mean of v over the keys it keeps; v[j] = j, so the
// mean of keys 0..K is K / 2 exactly (in f32 too: the sums are integers
// below 2^24). Row i of a causal call at start_pos keeps 0..start_pos + i.
Call cache_step(int64_t Lq, int64_t Lkv, int64_t start_pos) {
  Call c{bshd(DType::f32, Lq, 1, 1, [](int64_t, int64_t, int64_t) { return 0.0; }),
         bshd(DType::f32, Lkv, 1, 1, [](int64_t, int64_t, int64_t) { return 1.0; }),
         bshd(DType::f32, Lkv, 1, 1, [](int64_t s, int64_t, int64_t) { return static_cast<double>(s); })};
  c.causal = true;
  c.start_pos = start_pos;
  return c;
}

TEST(CustomSdpaStartPos, DecodePastTheKvBlockEdgeReadsBothBlocks) {
  // start_pos 520, Lkv 600: kvSize = 521, blocks [0, 512) and [512, 521);
  // the one query keeps keys 0..520: mean 260.
  EXPECT_EQ(run(cache_step(1, 600, 520), Numerics::exact).data[0], 260.0);
  EXPECT_EQ(run(cache_step(1, 600, 512), Numerics::exact).data[0], 256.0);  // key 512: one key into block 1
  EXPECT_EQ(run(cache_step(1, 600, 511), Numerics::exact).data[0], 255.5);  // exactly block 0
  // f32: the sums are exact, 1 / sum and the product round once each.
  EXPECT_NEAR(run(cache_step(1, 600, 520)).data[0], 260.0, 260.0 * 0x1p-22);
}

TEST(CustomSdpaStartPos, ChunkedPrefillStraddlingTheEdgeFillsEachBlockPerRow) {
  // Lq 4 at start_pos 510: row i keeps 0..510 + i, so rows 0 and 1 end in
  // block 0 (block 1 filled from column 0) and rows 2 and 3 read one and
  // two keys of block 1: (510 + i) / 2.
  Tensor out = run(cache_step(4, 600, 510), Numerics::exact);
  EXPECT_EQ(out.data, (std::vector<double>{255.0, 255.5, 256.0, 256.5}));
}

TEST(CustomSdpaStartPos, EveryQueryBlockOffsetsItsKeysByStartPos) {
  // Lq 40: query blocks [0, 32) and [32, 40) (q_split_size 32); at
  // start_pos 500 the second block's num_keys is min(32 + 500 + 8, 540) = 540,
  // past the 512-key edge, and its rows start mid-block.
  Tensor out = run(cache_step(40, 540, 500), Numerics::exact);
  for (int64_t i = 0; i < 40; ++i) EXPECT_EQ(out.data[i], (500.0 + i) / 2) << "row " << i;
  // Three kv blocks: at start_pos 1023 the rows end at keys 1023, 1024 and
  // 1025, the last two in the block from 1024.
  Tensor wide = run(cache_step(3, 1100, 1023), Numerics::exact);
  EXPECT_EQ(wide.data, (std::vector<double>{511.5, 512.0, 512.5}));
}

TEST(CustomSdpaStartPos, CausalOffsetFaultAlignsTopLeftAndOnlyStartPosShowsIt) {
  KernelFault fault;
  fault.causal_offset_ignores_start_pos = true;
  // start_pos 0: the fault computes the same as upstream.
  EXPECT_EQ(run(cache_step(3, 8, 0), Numerics::exact, fault).data, run(cache_step(3, 8, 0), Numerics::exact).data);
  // start_pos 5: row i keeps 0..i (mean i / 2), upstream 0..5 + i.
  EXPECT_EQ(run(cache_step(3, 8, 5), Numerics::exact, fault).data, (std::vector<double>{0.0, 0.5, 1.0}));
  EXPECT_EQ(run(cache_step(3, 8, 5), Numerics::exact).data, (std::vector<double>{2.5, 3.0, 3.5}));
}

TEST(CustomSdpaStartPos, NumKeysFaultStopsAtTheQueryBlockSoOnlyTheBlockEdgeShowsIt) {
  KernelFault fault;
  fault.num_keys_without_start_pos = true;
  // Within one kv block the loop still reads it all: the same as upstream.
  EXPECT_EQ(run(cache_step(1, 600, 300), Numerics::exact, fault).data[0], 150.0);
  EXPECT_EQ(run(cache_step(1, 600, 511), Numerics::exact, fault).data[0], 255.5);
  // start_pos 520: num_keys min(0 + 1, 521) = 1, only block 0 is read:
  // keys 0..511, mean 255.5 instead of 260.
  EXPECT_EQ(run(cache_step(1, 600, 520), Numerics::exact, fault).data[0], 255.5);
  EXPECT_EQ(run(cache_step(1, 600, 512), Numerics::exact, fault).data[0], 255.5);
}

}  // namespace
}  // namespace sdpa::llm
