// Which non-finite rows the declared custom_sdpa divergences explain, on
// hand-made tensors: each test states the verdict the page's facts give.
#include "backends/llm/llm_divergences.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backends/llm/custom_sdpa_test_support.h"

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
  x.g.out = filled(B, Hq, Lq, 0.5);  // aten's rows finite unless a test says otherwise
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
  // A NaN sum makes a row NaN: where aten's row 1 is the NaN one (the
  // kernel's the finite one), it explains nothing.
  x.g.out.data[1] = NAN;
  EXPECT_EQ(explain(x, {1}, {false, true, 0, 1}), std::nullopt);
  // Where one element of aten's row is not NaN (Ev 2: an inf and a
  // number), the kernel's NaN row is still the NaN sum's.
  const Tensor finite_out = x.g.out;
  x.g.out = Tensor(DType::f64, {1, 2, 1, 2}, 0.5);
  x.g.out.data[2] = INFINITY;
  EXPECT_EQ(explain(x, {1}, {false, true, 0, 1}), std::string(kCarriedRowSum));
  x.g.out = finite_out;
  x.g.out.data[1] = 0.5;
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

// [1, S, H, D] -> [1, H, S, D].
Tensor to_bhsd(const Tensor& x) {
  const int64_t S = x.shape[1], H = x.shape[2], D = x.shape[3];
  Tensor out(x.dtype, {1, H, S, D});
  for (int64_t s = 0; s < S; ++s)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < D; ++d) out.data[(h * S + s) * D + d] = x.data[(s * H + h) * D + d];
  return out;
}

// The explanation is worked out from the page, not from the kernel model, so
// the two are checked against each other: on random calls at every tree
// (masked, causal at a start_pos, or plain; two kv blocks or one; NaN and
// infinities in the data, -inf query rows and masked prefixes; scales 0,
// negative, tiny and huge; 1 to 4 threads), every row put down to a NaN sum
// (carried, or a first block with no kept key) is NaN in the kernel run in
// the numerics the explanation was asked for. A false explanation would
// hide a real NaN.
TEST(LlmDivergences, ANanSumExplanationNamesOnlyRowsTheKernelMakesNan) {
  std::mt19937_64 rng(20261207);
  auto uniform = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
  auto pick = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
  for (const auto& [tree, rev] : et_revisions()) {
    int64_t explained = 0, carried = 0;
    for (int it = 0; it < 300; ++it) {
      const int64_t Hq = pick(1, 3), Hkv = pick(0, 1) ? Hq : 1, Lq = pick(1, 70), E = pick(1, 2);
      const int mode = static_cast<int>(pick(0, 2));  // masked, causal, plain
      int64_t Lkv = pick(0, 1) ? pick(513, 540) : pick(1, 40);
      if (mode != 0) Lkv = std::max(Lkv, Lq + pick(0, 3));
      CustomSdpaCall call{mode == 1, mode == 0, 0, pick(1, 4), rev.nan_for_masked_block};
      if (mode == 1) call.start_pos = pick(0, Lkv - Lq);
      if (mode == 2) call.start_pos = Lkv - Lq;  // every key read
      std::optional<double> scale;
      const std::vector<double> scales = {0.0, -0.5, 1e-50, 1e30};
      if (const int64_t s = pick(0, 9); s < 4) scale = scales[static_cast<size_t>(s)];
      const double p = uniform(0, 1) < 0.3 ? 0.02 : 0.0;
      auto value = [&] {
        const double r = uniform(0, 1);
        return r < p ? -INFINITY : r < 1.5 * p ? INFINITY : r < 1.7 * p ? NAN : uniform(-2, 2);
      };
      Tensor q(DType::f32, {1, Lq, Hq, E}), k(DType::f32, {1, Lkv, Hkv, E}), v(DType::f32, {1, Lkv, Hkv, E});
      for (double& x : q.data) x = value();
      for (double& x : k.data) x = value();
      for (double& x : v.data) x = uniform(0, 1) < p ? INFINITY : uniform(-2, 2);
      const bool neg_inf_row = uniform(0, 1) < 0.2;  // a -inf query row
      if (neg_inf_row)
        for (int64_t e = 0, i = pick(0, Lq - 1), h = pick(0, Hq - 1); e < E; ++e) q.data[(i * Hq + h) * E + e] = -INFINITY;
      const bool finite_data = p == 0.0 && !neg_inf_row;
      std::optional<Tensor> mask;
      if (mode == 0) {
        Tensor m(DType::f32, {Lq, Lkv});
        const double dropped = uniform(0, 1) < 0.5 ? uniform(0, 0.5) : 0.0;
        for (double& x : m.data) x = uniform(0, 1) < dropped ? -INFINITY : 0.0;
        for (int64_t t = pick(0, 4); t > 0; --t) {
          const int64_t i = pick(0, Lq - 1), upto = pick(0, 1) ? std::min<int64_t>(512, Lkv) : Lkv;
          for (int64_t j = 0; j < upto; ++j) m.data[i * Lkv + j] = -INFINITY;
        }
        mask = m;
      }
      custom_sdpa_test::Call kernel_call{q, k, v, mask, call.start_pos, 0.0, call.causal, scale};
      const Tensor emulated = custom_sdpa_test::run(kernel_call, Numerics::emulated, {}, call.threads, rev);
      const Tensor exact = custom_sdpa_test::run(kernel_call, Numerics::exact, {}, call.threads, rev);
      Case c;
      c.q_heads = Hq;
      c.kv_heads = Hkv;
      c.q_len = Lq;
      c.kv_len = Lkv;
      c.head_dim = c.value_dim = E;
      c.scale = scale;
      CaseTensors t;
      t.q = to_bhsd(q);
      t.k = to_bhsd(k);
      t.v = to_bhsd(v);
      t.mask = mask;
      Golden g;
      g.out = Tensor(DType::f64, {1, Hq, Lq, E});  // aten finite everywhere: every explanation is asked for
      g.fully_masked.assign(static_cast<size_t>(Hq * Lq), 0);
      for (int64_t h = 0; h < Hq && mask; ++h)
        for (int64_t i = 0; i < Lq; ++i)
          g.fully_masked[static_cast<size_t>(h * Lq + i)] =
              std::all_of(mask->data.begin() + i * Lkv, mask->data.begin() + (i + 1) * Lkv,
                          [](double x) { return x == -INFINITY; });
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t i = 0; i < Lq; ++i) {
          const int64_t row = h * Lq + i;
          if (g.fully_masked[static_cast<size_t>(row)]) continue;
          for (const bool f32 : {true, false}) {
            CustomSdpaCall in_numerics = call;
            in_numerics.f32 = f32;
            const auto why = explain_custom_sdpa_nan(c, t, g, {row}, in_numerics);
            const Tensor& out = f32 ? emulated : exact;
            bool nan = false;
            for (int64_t e = 0; e < E; ++e) nan = nan || std::isnan(out.data[(i * Hq + h) * E + e]);
            // The other way: with finite data at the default scale, every
            // NaN row of a row that keeps a key comes from a NaN sum the
            // explanation names (a row's own scores cannot make one).
            if (finite_data && !scale && nan)
              ASSERT_TRUE(why && *why != kCausalOverwrite)
                  << tree << (f32 ? " f32" : " exact") << ": the kernel's NaN row " << row << " of call " << it
                  << " is not explained";
            if (!why || *why == kCausalOverwrite) continue;
            ++explained;
            carried += *why == kCarriedRowSum;
            ASSERT_TRUE(nan) << tree << (f32 ? " f32" : " exact") << ": " << *why << " explains row " << row
                             << " of call " << it
                             << " (mode " << mode << ", Hq " << Hq << ", Lq " << Lq << ", Lkv " << Lkv
                             << ", start_pos " << call.start_pos << ", threads " << call.threads << ")";
          }
        }
    }
    EXPECT_GT(carried, 100) << tree;  // the sample reaches the explanation
    EXPECT_GE(explained, carried) << tree;
  }
}

}  // namespace
}  // namespace sdpa::llm
