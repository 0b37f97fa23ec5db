// Which non-finite rows the declared custom_sdpa divergences explain, on
// hand-made tensors: each test states the verdict the page's facts give.
#include "backends/llm/llm_divergences.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace sdpa::llm {
namespace {

// [B, Hq, Lq, E] tensors of E = 1 filled with `fill`.
Tensor filled(int64_t B, int64_t H, int64_t L, double fill) { return Tensor(DType::f32, {B, H, L, 1}, fill); }

struct Call {
  Case c;
  CaseTensors t;
  Golden g;
};

Call make(int64_t B, int64_t Hq, int64_t Lq, int64_t Lkv) {
  Call x;
  x.c.q_heads = x.c.kv_heads = Hq;
  x.c.q_len = Lq;
  x.c.kv_len = Lkv;
  x.t.q = filled(B, Hq, Lq, 0.5);
  x.t.k = filled(B, Hq, Lkv, 0.25);
  x.t.v = filled(B, Hq, Lkv, 1.0);
  x.g.fully_masked.assign(static_cast<size_t>(B * Hq * Lq), 0);
  return x;
}

std::optional<std::string> explain(const Call& x, std::vector<int64_t> rows, CustomSdpaCall call) {
  return explain_custom_sdpa_nan(x.c, x.t, x.g, rows, call);
}

// Causal, Lq = 2, Lkv = 4, start_pos 0: keys are cut to start_pos + Lq = 2
// (§1.5). Row 0 drops key 1, which the kernel still reads (0 * V), and
// never reads keys 2 and 3. An inf in V reaches the row at key 1 (both
// NaN, nothing to explain) but not at key 2 (aten NaN, custom_sdpa finite).
TEST(LlmDivergences, AnInfInVExplainsARowOnlyAtAKeyTheKernelNeverReads) {
  Call x = make(1, 1, 2, 4);
  const CustomSdpaCall causal{true, false, 0, 1};
  x.t.v.data[1] = INFINITY;
  EXPECT_EQ(explain(x, {0}, causal), std::nullopt);
  x.t.v.data[1] = 1.0;
  x.t.v.data[2] = INFINITY;
  EXPECT_EQ(explain(x, {0}, causal), std::string(kCausalOverwrite));
  // Row 1 keeps key 1 and reads no key past it: the same inf at key 2.
  EXPECT_EQ(explain(x, {1}, causal), std::string(kCausalOverwrite));
}

// A NaN score at a dropped key is written over with -inf: explained
// whether the key is read or not; at a kept key it is not.
TEST(LlmDivergences, ANanScoreExplainsARowOnlyAtACausallyDroppedKey) {
  Call x = make(1, 1, 2, 2);
  x.t.k.data[1] = NAN;
  EXPECT_EQ(explain(x, {0}, {true, false, 0, 1}), std::string(kCausalOverwrite));
  EXPECT_EQ(explain(x, {1}, {true, false, 0, 1}), std::nullopt);
  EXPECT_EQ(explain(x, {0}, {false, false, 0, 1}), std::nullopt);
}

// Two heads, Lq = 1, a zero mask: head 0's NaN q makes its row sum NaN,
// which one thread carries into head 1's row (row 1 of [B, Hq, Lq]). Two
// threads keep the heads apart; a clean head 0 carries nothing.
TEST(LlmDivergences, ANanRowSumExplainsTheSameRowOfTheThreadsLaterBlocks) {
  Call x = make(1, 2, 1, 3);
  x.c.mask = MaskSpec{};
  x.t.mask = Tensor(DType::f32, {1, 3});
  x.t.q.data[0] = NAN;
  EXPECT_EQ(explain(x, {1}, {false, true, 0, 1}), std::string(kCarriedRowSum));
  EXPECT_EQ(explain(x, {1}, {false, true, 0, 2}), std::nullopt);
  x.t.q.data[0] = 0.5;
  EXPECT_EQ(explain(x, {1}, {false, true, 0, 1}), std::nullopt);
  // A later block never reaches an earlier one.
  x.t.q.data[1] = NAN;
  EXPECT_EQ(explain(x, {0}, {false, true, 0, 1}), std::nullopt);
}

// The tree before f3e8972de6: a row whose first kv block (512 keys) keeps
// no key is NaN however its later keys go, and its NaN sum reaches the
// same row of the thread's later blocks; in later trees neither happens.
TEST(LlmDivergences, BeforeApril2025AFirstBlockWithNoKeptKeyExplainsItsRowAndTheRowsItCarriesTo) {
  Call x = make(1, 2, 1, 520);
  x.c.mask = MaskSpec{};
  x.t.mask = Tensor(DType::f32, {1, 520});
  for (int64_t j = 0; j < 512; ++j) x.t.mask->data[j] = -INFINITY;
  CustomSdpaCall before{false, true, 0, 1, true};
  EXPECT_EQ(explain(x, {0}, before), std::string(kMaskedBlockNan));
  EXPECT_EQ(explain(x, {0}, {false, true, 0, 1}), std::nullopt);
  x.t.mask->data[0] = 0.0;  // a kept key in the first block: nothing to explain
  EXPECT_EQ(explain(x, {0}, before), std::nullopt);
  // Every key of head 0's row masked (fully masked in golden), head 1 clean:
  // on one thread head 1's row inherits the NaN sum.
  Call y = make(1, 2, 1, 3);
  y.c.mask = MaskSpec{};
  y.t.mask = Tensor(DType::f32, {1, 3}, -INFINITY);
  y.g.fully_masked = {1, 1};
  EXPECT_EQ(explain(y, {0, 1}, {false, true, 0, 1, true}), std::string(kFullyMaskedNan));
  y.t.mask = Tensor(DType::f32, {1, 3});
  y.t.q.data[0] = -INFINITY;  // head 0's scores all -inf from the data, head 1's finite
  y.g.fully_masked = {0, 0};
  EXPECT_EQ(explain(y, {1}, {false, true, 0, 1, true}), std::string(kCarriedRowSum));
  EXPECT_EQ(explain(y, {1}, {false, true, 0, 1, false}), std::nullopt);
  EXPECT_EQ(explain(y, {1}, {false, true, 0, 2, true}), std::nullopt);
}

// The divergence is declared by the tree that has it only.
TEST(LlmDivergences, TheMaskedBlockNanIsDeclaredBeforeApril2025Only) {
  auto names = [](const EtRevision& rev) {
    std::vector<std::string> out;
    for (const auto& d : custom_sdpa_divergences(rev)) out.push_back(d.name);
    return out;
  };
  for (const auto& [tree, rev] : et_revisions()) {
    const auto n = names(rev);
    EXPECT_EQ(std::count(n.begin(), n.end(), kMaskedBlockNan), tree == "2025-04-24" ? 1 : 0) << tree;
  }
}

// Lq = 40: query blocks [0, 32) and [32, 40), one head. Row 33 runs as
// row 1 of block 1: only row 1 of block 0 carries into it. A +inf in the
// additive mask makes a finite score +inf, when the mask is passed.
TEST(LlmDivergences, OnlyTheSameRowOffsetOfAnEarlierQueryBlockCarries) {
  Call x = make(1, 1, 40, 2);
  x.c.mask = MaskSpec{};
  x.t.mask = Tensor(DType::f32, {40, 2});
  x.t.q.data[2] = NAN;  // row 2: block 0, offset 2
  EXPECT_EQ(explain(x, {33}, {false, true, 0, 1}), std::nullopt);
  EXPECT_EQ(explain(x, {34}, {false, true, 0, 1}), std::string(kCarriedRowSum));
  x.t.q.data[2] = 0.5;
  x.t.mask->data[1 * 2 + 0] = INFINITY;  // row 1, key 0
  EXPECT_EQ(explain(x, {33}, {false, true, 0, 1}), std::string(kCarriedRowSum));
  EXPECT_EQ(explain(x, {33}, {false, false, 0, 1}), std::nullopt);
}

// Two heads of Lq = 40: head 0's blocks [0, 32) and [32, 40), then head
// 1's. Head 0's row 33 (block 1, row 1) carries into head 1's row 1 (row
// 41 of [B, Hq, Lq]), which runs next on the same thread, and not into
// head 1's row 2.
TEST(LlmDivergences, ALaterQueryBlockOfAnEarlierHeadCarriesItsOwnRows) {
  Call x = make(1, 2, 40, 2);
  x.c.mask = MaskSpec{};
  x.t.mask = Tensor(DType::f32, {40, 2});
  x.t.q.data[33] = NAN;  // head 0, row 33
  EXPECT_EQ(explain(x, {41}, {false, true, 0, 1}), std::string(kCarriedRowSum));
  EXPECT_EQ(explain(x, {42}, {false, true, 0, 1}), std::nullopt);
}

// A fully masked row is the fully-masked divergence; a mixed set of rows
// names the first row's other reason, and one unexplained row explains none.
TEST(LlmDivergences, EveryRowMustBeExplained) {
  Call x = make(1, 2, 1, 3);
  x.c.mask = MaskSpec{};
  x.t.mask = Tensor(DType::f32, {1, 3});
  x.g.fully_masked = {1, 0};
  EXPECT_EQ(explain(x, {0}, {false, true, 0, 1}), std::string(kFullyMaskedNan));
  EXPECT_EQ(explain(x, {0, 1}, {false, true, 0, 1}), std::nullopt);
  x.t.q.data[0] = NAN;
  EXPECT_EQ(explain(x, {0, 1}, {false, true, 0, 1}), std::string(kCarriedRowSum));
}

}  // namespace
}  // namespace sdpa::llm
