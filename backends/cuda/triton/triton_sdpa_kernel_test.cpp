#include "backends/cuda/triton/triton_sdpa_kernel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "backends/cuda/triton/triton_test_util.h"

namespace sdpa::cuda_triton {
namespace {

using testing::bhld;
using testing::bools;
using testing::raised;
using Spec = testing::TritonCallSpec;

Tensor run(const Spec& c, Numerics n = Numerics::emulated, SdpaFault fault = SdpaFault::none,
           SdpaTree tree = SdpaTree::main) {
  return testing::run_triton(kTritonSdpaOp, triton_sdpa_kernel(n, fault, tree), c);
}

Tensor run_unsafe(const Spec& c) { return run(c, Numerics::emulated, SdpaFault::unsafe_softmax); }

// The smallest power-of-2 D the power-of-2 program compiles for (tl.dot's K).
constexpr int64_t kD = 16;

double at(const Tensor& t, int64_t h, int64_t i, int64_t e) {
  return t.data[(h * t.shape[2] + i) * t.shape[3] + e];
}

// A bool mask [B, 1, Lq, Lkv] that keeps every key: it also masks the last
// KV tile's zero padding, which an unmasked, non-causal power-of-2 call
// lets into its softmax (AnUnmaskedCallCountsTheLastTilesZeroPaddedKeys).
Tensor keep_all(int64_t B, int64_t Lq, int64_t Lkv) {
  return bools({B, 1, Lq, Lkv}, std::vector<int>(static_cast<size_t>(B * Lq * Lkv), 1));
}

// semantics §5 item 6 at D 16 (q doubled, so the scores times 1/sqrt(16)
// are those of the page's D 4): q[1,1,2,16], k/v[1,1,2,16], scale 0.0,
// every key kept.
Spec scale_zero_case() {
  auto q = bhld({1, 1, 2, kD}, [](int64_t, int64_t, int64_t i, int64_t e) { return e == i ? 2.0 : 0.0; });
  auto k = bhld({1, 1, 2, kD}, [](int64_t, int64_t, int64_t j, int64_t e) {
    return j == 0 ? (e < 2 ? 1.0 : 0.0) : (e == 1 ? 2.0 : 0.0);
  });
  auto v = bhld({1, 1, 2, kD}, [](int64_t, int64_t, int64_t j, int64_t e) {
    return j == 0 && e == 0 ? 2.0 : j == 1 && e == 1 ? 4.0 : 0.0;
  });
  return {q, k, v, keep_all(1, 2, 2)};
}

TEST(TritonSdpa, ScaleZeroIsReadAsOneOverSqrtD) {
  // Scores q.k: row 0 (2, 0), row 1 (2, 4); times 1/sqrt(16) = 0.25, not times 0.
  const double w_row0 = 1.0 / (1.0 + std::exp(-0.5));  // softmax(0.5, 0)[0]
  const double w_row1 = 1.0 / (1.0 + std::exp(0.5));   // softmax(0.5, 1)[0]
  for (Numerics n : {Numerics::exact, Numerics::emulated}) {
    const double tol = n == Numerics::exact ? 1e-12 : 1e-2;
    Tensor out = run(scale_zero_case(), n);
    EXPECT_NEAR(at(out, 0, 0, 0), 2 * w_row0, tol);
    EXPECT_NEAR(at(out, 0, 0, 1), 4 * (1 - w_row0), tol);
    EXPECT_NEAR(at(out, 0, 1, 0), 2 * w_row1, tol);
    EXPECT_NEAR(at(out, 0, 1, 1), 4 * (1 - w_row1), tol);
    EXPECT_GT(std::fabs(at(out, 0, 0, 0) - 1.0), 0.2);  // aten's scale 0: the mean of v, 1.0
  }
}

TEST(TritonSdpa, FullyMaskedRowGivesZero) {
  for (int64_t D : {kD, int64_t{3}}) {  // the power-of-2 program (inv_l guard) and the other (l starts at 1)
    auto f = [](int64_t, int64_t, int64_t l, int64_t e) { return 0.5 + 0.25 * l - 0.125 * e; };
    Spec c{bhld({1, 1, 2, D}, f), bhld({1, 1, 3, D}, f), bhld({1, 1, 3, D}, f),
           bools({1, 1, 2, 3}, {1, 1, 1, 0, 0, 0})};
    for (Numerics n : {Numerics::exact, Numerics::emulated}) {
      Tensor out = run(c, n);
      for (int64_t e = 0; e < D; ++e) {
        EXPECT_TRUE(std::isfinite(at(out, 0, 0, e)));
        EXPECT_EQ(at(out, 0, 1, e), 0.0) << "D " << D << " e " << e;
      }
    }
  }
}

// The self-test mutant SdpaFault::unsafe_softmax, the online softmax of
// 4495d959e2 (stored pytorch/executorch 7739119: p = exp(qk - m_ij), alpha =
// exp(m_i - m_ij), no safe_diff, no tile skipping): a tile before a row's
// first kept key gives NaN, which stays in acc and l. So a fully masked row
// is NaN where the guarded program gives 0 (alone in its query tile too,
// where the guarded program skips every tile), and so is a row whose first
// KV tile (64 keys at a power-of-2 D, else 128) the mask empties though a
// later one keeps keys; a row that keeps a key in its first tile is as
// before. Both programs.
TEST(TritonSdpa, TheUnsafeSoftmaxMutantGivesNaNFromATileBeforeARowsFirstKeptKey) {
  for (const auto& [D, tile] : {std::pair<int64_t, int64_t>{kD, 64}, {3, 128}}) {
    const int64_t Lkv = 2 * tile;
    auto f = [](int64_t, int64_t, int64_t l, int64_t e) { return 0.5 + 0.01 * l - 0.125 * e; };
    std::vector<int> keep(3 * Lkv, 0);                         // row 0: no key
    for (int64_t j = tile; j < Lkv; ++j) keep[Lkv + j] = 1;    // row 1: the second tile only
    for (int64_t j = 0; j < Lkv; ++j) keep[2 * Lkv + j] = 1;   // row 2: every key
    Spec c{bhld({1, 1, 3, D}, f), bhld({1, 1, Lkv, D}, f), bhld({1, 1, Lkv, D}, f), bools({1, 1, 3, Lkv}, keep)};
    const Tensor safe = run(c);
    const Tensor unsafe = run_unsafe(c);
    for (int64_t e = 0; e < D; ++e) {
      EXPECT_EQ(at(safe, 0, 0, e), 0.0) << "D " << D;
      EXPECT_TRUE(std::isfinite(at(safe, 0, 1, e))) << "D " << D;
      EXPECT_TRUE(std::isnan(at(unsafe, 0, 0, e))) << "D " << D << ": a fully masked row";
      EXPECT_TRUE(std::isnan(at(unsafe, 0, 1, e))) << "D " << D << ": an empty first tile";
      EXPECT_EQ(at(unsafe, 0, 2, e), at(safe, 0, 2, e)) << "D " << D << ": a row that keeps every key";
    }
    Spec alone{bhld({1, 1, 1, D}, f), bhld({1, 1, Lkv, D}, f), bhld({1, 1, Lkv, D}, f),
               bools({1, 1, 1, Lkv}, std::vector<int>(static_cast<size_t>(Lkv), 0))};
    EXPECT_EQ(run(alone).data, std::vector<double>(static_cast<size_t>(D), 0.0)) << "D " << D;
    for (double o : run_unsafe(alone).data) EXPECT_TRUE(std::isnan(o)) << "D " << D << ": a fully masked row alone";
  }
}

// A KV tile that no row of its query tile keeps is skipped (since
// 6b5273f289): an inf in V there never meets a zero weight.
TEST(TritonSdpa, AKvTileNoRowOfTheQueryTileKeepsIsSkipped) {
  // Lkv 128: two BLOCK_N = 64 tiles; row 0 keeps keys 0..63, v[100] = inf.
  // Scores all 0 (k = 0), so row 0 is the mean of v over keys 0..63: (0 + 63) / 2 * 0.125.
  auto v = bhld({1, 1, 128, kD}, [](int64_t, int64_t, int64_t j, int64_t) {
    return j == 100 ? std::numeric_limits<double>::infinity() : 0.125 * j;
  });
  auto zero = [](auto...) { return 0.0; };
  std::vector<int> keep(128, 0);
  for (int j = 0; j < 64; ++j) keep[j] = 1;
  Spec one_row{bhld({1, 1, 1, kD}, zero), bhld({1, 1, 128, kD}, zero), v, bools({1, 1, 1, 128}, keep)};
  for (Numerics n : {Numerics::exact, Numerics::emulated})
    EXPECT_EQ(run(one_row, n).data, std::vector<double>(kD, 3.9375)) << "the second tile is skipped";
  // Row 1 of the same BLOCK_M = 64 query tile keeps key 64: the tile runs
  // for both rows, and row 0's zero weight meets the inf: NaN, as upstream.
  std::vector<int> two_rows = keep;
  two_rows.resize(256, 0);
  for (int j = 0; j < 65; ++j) two_rows[128 + j] = 1;
  Spec shared{bhld({1, 1, 2, kD}, zero), bhld({1, 1, 128, kD}, zero), v, bools({1, 1, 2, 128}, two_rows)};
  Tensor out = run(shared);
  EXPECT_TRUE(std::isnan(at(out, 0, 0, 0)));
}

// A KV tile the mask empties for every row is skipped (semantics §4.5):
// the output equals the call without the emptied tile's keys, bit for bit,
// whether that tile comes first or last, for both programs (D 16: 64-key
// tiles; D 3: 128-key tiles).
TEST(TritonSdpa, AKvTileTheMaskEmptiesGivesTheLiveKeysResult) {
  for (const auto& [D, tile] : {std::pair<int64_t, int64_t>{kD, 64}, {3, 128}}) {
    const int64_t Lq = 3, Lkv = 2 * tile;
    auto qf = [](int64_t, int64_t, int64_t i, int64_t e) { return std::sin(1.0 + i + 0.5 * e); };
    auto kf = [](int64_t, int64_t, int64_t j, int64_t e) { return std::cos(0.3 * j - e); };
    auto vf = [](int64_t, int64_t, int64_t j, int64_t e) { return 0.01 * j - 0.2 * e; };
    for (bool first : {true, false}) {
      std::vector<int> keep(Lq * Lkv);
      for (int64_t i = 0; i < Lq; ++i)
        for (int64_t j = 0; j < Lkv; ++j) keep[i * Lkv + j] = (j < tile) != first;
      Spec whole{bhld({1, 1, Lq, D}, qf), bhld({1, 1, Lkv, D}, kf), bhld({1, 1, Lkv, D}, vf),
                 bools({1, 1, Lq, Lkv}, keep)};
      const int64_t from = first ? tile : 0;
      auto shifted = [&](auto f) { return [f, from](int64_t b, int64_t h, int64_t j, int64_t e) { return f(b, h, j + from, e); }; };
      Spec live{bhld({1, 1, Lq, D}, qf), bhld({1, 1, tile, D}, shifted(kf)), bhld({1, 1, tile, D}, shifted(vf))};
      for (Numerics n : {Numerics::emulated, Numerics::exact})
        EXPECT_EQ(run(whole, n).data, run(live, n).data) << "D " << D << (first ? ", first" : ", last") << " tile";
    }
  }
}

// A [B, H, L, kD] tensor's rows, each value repeated over its kD elements.
std::vector<double> rows(std::vector<double> values) {
  std::vector<double> out;
  for (double x : values) out.insert(out.end(), kD, x);
  return out;
}

TEST(TritonSdpa, MaskAndCausalAreBothApplied) {
  // Equal scores; v = 1, 2, 4. Mask rows keep {0,1,2}, {1,2}, {0,2}; causal keeps j <= i.
  Spec c{bhld({1, 1, 3, kD}, [](auto...) { return 1.0; }), bhld({1, 1, 3, kD}, [](auto...) { return 0.0; }),
         bhld({1, 1, 3, kD}, [](int64_t, int64_t, int64_t j, int64_t) { return std::ldexp(1.0, j); }),
         bools({1, 1, 3, 3}, {1, 1, 1, 0, 1, 1, 1, 0, 1})};
  c.is_causal = true;
  for (Numerics n : {Numerics::exact, Numerics::emulated})
    EXPECT_EQ(run(c, n).data, rows({1.0, 2.0, 2.5}));  // causal alone: 1, 1.5, 7/3
}

TEST(TritonSdpa, GqaMapsQueryHeadToHeadOverGroupSize) {
  // Hq 4, Hkv 2, one key: head h returns v of kv head h // 2 (a modulo map gives 10, 11, 10, 11).
  Spec c{bhld({1, 4, 1, kD}, [](auto...) { return 1.0; }), bhld({1, 2, 1, kD}, [](auto...) { return 1.0; }),
         bhld({1, 2, 1, kD}, [](int64_t, int64_t h, int64_t, int64_t) { return 10.0 + h; }), keep_all(1, 1, 1)};
  c.enable_gqa = true;
  EXPECT_EQ(run(c).data, rows({10, 10, 11, 11}));
}

TEST(TritonSdpa, MqaWithoutEnableGqaRaises) {
  // semantics §5 item 9 at D 16: q[1,4,2,16], k/v[1,1,2,16].
  auto f = [](auto...) { return 1.0; };
  Spec c{bhld({1, 4, 2, kD}, f), bhld({1, 1, 2, kD}, f), bhld({1, 1, 2, kD}, f), keep_all(1, 2, 2)};
  EXPECT_EQ(raised([&] { run(c); }),
            std::make_pair(KernelError::Kind::recoverable,
                           std::string("Head counts must match (or use enable_gqa=True); got H_q=4, H_k=1.")));
  c.enable_gqa = true;
  EXPECT_EQ(run(c).data, std::vector<double>(8 * kD, 1.0));
}

Tensor run_2025_12_17(const Spec& c, Numerics n = Numerics::emulated) {
  return run(c, n, SdpaFault::none, SdpaTree::dec_2025);
}

// executorch 2025-12-17 (4495d959e2, stored sdpa.py at 7739119): the
// wrapper's texts and order of that tree.
TEST(TritonSdpa2025_12_17, TheWrapperRefusesWithThatTreesTexts) {
  auto f = [](auto...) { return 1.0; };
  Spec mqa{bhld({1, 4, 2, kD}, f), bhld({1, 1, 2, kD}, f), bhld({1, 1, 2, kD}, f)};
  EXPECT_EQ(raised([&] { run_2025_12_17(mqa); }).second, "Head dimension must match; got H_q=4, H_k=1, H_v=1.");
  mqa.enable_gqa = true;
  mqa.dropout_p = 0.5;  // dropout is checked first, then enable_gqa
  EXPECT_EQ(raised([&] { run_2025_12_17(mqa); }).second,
            "dropout_p must be 0.0 (not supported in this implementation).");
  mqa.dropout_p = 0.0;
  EXPECT_EQ(raised([&] { run_2025_12_17(mqa); }).second,
            "enable_gqa must be False (not supported in this implementation).");
  Spec causal{bhld({1, 1, 1, kD}, f), bhld({1, 1, 2, kD}, f), bhld({1, 1, 2, kD}, f)};
  causal.is_causal = true;
  EXPECT_EQ(raised([&] { run_2025_12_17(causal); }).second, "Causal masking requires L_q == L_kv; got L_q=1, L_kv=2.");
  // Dim 1 of the mask is not checked; dims 0, 2, 3 are, in that order.
  Spec mask{bhld({1, 1, 2, kD}, f), bhld({1, 1, 3, kD}, f), bhld({1, 1, 3, kD}, f), bools({1, 5, 2, 2}, std::vector<int>(20, 1))};
  EXPECT_EQ(raised([&] { run_2025_12_17(mask); }).second,
            "attn_mask shape mismatch: expected [B=1, H, L_q=2, L_kv=3], got torch.Size([1, 5, 2, 2])");
  mask.mask = bools({2, 3}, std::vector<int>(6, 1));  // shape[0] = 2 != B: the text, before any IndexError
  EXPECT_EQ(raised([&] { run_2025_12_17(mask); }).second,
            "attn_mask shape mismatch: expected [B=1, H, L_q=2, L_kv=3], got torch.Size([2, 3])");
  mask.mask = bools({1, 3}, std::vector<int>(3, 1));  // shape[0] = B, then shape[2] past the rank
  EXPECT_EQ(raised([&] { run_2025_12_17(mask); }).second, "IndexError: tuple index out of range");
  mask.mask = bools({1, 5, 2, 3}, std::vector<int>(30, 1));
  EXPECT_EQ(run_2025_12_17(mask).data, run(Spec{mask.q, mask.k, mask.v, keep_all(1, 2, 3)}).data)
      << "a per-head mask is taken";
  mask.mask = bools({1, 0, 2, 3}, {});  // passes the checks, but has no head 0 to read
  EXPECT_EQ(raised([&] { run_2025_12_17(mask); }),
            std::make_pair(KernelError::Kind::unsupported, std::string("attn_mask with a size-0 head dim: not modeled")));
}

// The programs of that tree read the mask at b * stride(0) + i * stride(2)
// + j * stride(3): every head takes head 0's rows of a per-head mask, in
// both programs, exactly as in the emulated arithmetic.
TEST(TritonSdpa2025_12_17, EveryHeadReadsHeadZerosRowsOfAPerHeadMask) {
  for (int64_t D : {kD, int64_t{3}}) {
    auto qf = [](int64_t, int64_t h, int64_t i, int64_t e) { return std::sin(1.0 + h + i + 0.5 * e); };
    auto kf = [](int64_t, int64_t h, int64_t j, int64_t e) { return std::cos(0.3 * j - e + h); };
    // Head 0 keeps keys 0 and 1 of each row, head 1 keys 2 and 3.
    std::vector<int> keep(2 * 2 * 4, 0);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) keep[i * 4 + j] = keep[8 + i * 4 + 2 + j] = 1;
    Spec per_head{bhld({1, 2, 2, D}, qf), bhld({1, 2, 4, D}, kf), bhld({1, 2, 4, D}, kf), bools({1, 2, 2, 4}, keep)};
    std::vector<int> head0(keep.begin(), keep.begin() + 8);
    Spec shared{per_head.q, per_head.k, per_head.v, bools({1, 1, 2, 4}, head0)};
    for (Numerics n : {Numerics::emulated, Numerics::exact})
      EXPECT_EQ(run_2025_12_17(per_head, n).data, run_2025_12_17(shared, n).data) << "D " << D;
    EXPECT_EQ(raised([&] { run(per_head); }).second.rfind("attn_mask head dimension must be 1", 0), 0u)
        << "main refuses it";
    // Batch 2: batch 1's rows start at stride(0) = H * Lq * Lkv. Its head 0
    // keeps key 3 only, its head 1 key 0 only: each head takes key 3.
    std::vector<int> two = keep;
    two.resize(32, 0);
    for (int i = 0; i < 2; ++i) two[16 + i * 4 + 3] = two[24 + i * 4] = 1;
    Spec batched{bhld({2, 2, 2, D}, qf), bhld({2, 2, 4, D}, kf), bhld({2, 2, 4, D}, kf), bools({2, 2, 2, 4}, two)};
    const Tensor out = run_2025_12_17(batched);
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t e = 0; e < D; ++e)
        EXPECT_EQ(out.data[(((2 + h) * 2) + 1) * D + e], batched.v.data[((2 + h) * 4 + 3) * D + e])
            << "D " << D << ", batch 1, head " << h;
  }
}

TEST(TritonSdpa, PIsRoundedToBf16BeforePV) {
  // Scores 0 and -0.0625: P = (1, expf(-0.0625) = 0.93941307), bf16 0.9375; v = (0, 1).
  // bf16(0.9375 / 1.93941307) = 0.482421875; with P unrounded it would be 0.484375.
  // q and k are 0 past element 0.
  Spec c{bhld({1, 1, 1, kD}, [](int64_t, int64_t, int64_t, int64_t e) { return e == 0 ? 1.0 : 0.0; }),
         bhld({1, 1, 2, kD}, [](int64_t, int64_t, int64_t j, int64_t e) { return j && e == 0 ? -0.0625 : 0.0; }),
         bhld({1, 1, 2, kD}, [](int64_t, int64_t, int64_t j, int64_t) { return double(j); }), keep_all(1, 1, 2)};
  c.scale = 1.0;
  EXPECT_EQ(run(c).data[0], 0.482421875);
  EXPECT_NEAR(run(c, Numerics::exact).data[0], std::exp(-0.0625) / (1 + std::exp(-0.0625)), 1e-15);
}

// Neither mask nor causal, a power-of-2 D: nothing masks the last KV
// tile's keys past Lkv, loaded as k = v = 0 (executorch sdpa.py
// _sdpa_fwd_kernel_body, read at 01b05b9088; upstream's test notes it).
// Lkv 2, scores 0, v = (1, 3): the 62 padded keys score 0 too, so the row
// is (1 + 3) / 64, not 2. A mask that keeps every key, causal, a
// non-power-of-2 D (its kv_col_mask) or Lkv a multiple of BLOCK_N = 64
// gives the softmax.
TEST(TritonSdpa, AnUnmaskedCallCountsTheLastTilesZeroPaddedKeys) {
  auto zero = [](auto...) { return 0.0; };
  auto v13 = [](int64_t, int64_t, int64_t j, int64_t) { return 1.0 + 2.0 * (j % 2); };
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    Spec bare{bhld({1, 1, 1, kD}, zero), bhld({1, 1, 2, kD}, zero), bhld({1, 1, 2, kD}, v13)};
    EXPECT_EQ(run(bare, n).data, std::vector<double>(kD, 0.0625));
    Spec masked = bare;
    masked.mask = keep_all(1, 1, 2);
    EXPECT_EQ(run(masked, n).data, std::vector<double>(kD, 2.0));
    Spec odd_d{bhld({1, 1, 1, 3}, zero), bhld({1, 1, 2, 3}, zero), bhld({1, 1, 2, 3}, v13)};
    EXPECT_EQ(run(odd_d, n).data, std::vector<double>(3, 2.0));
    Spec whole_tile{bhld({1, 1, 1, kD}, zero), bhld({1, 1, 64, kD}, zero), bhld({1, 1, 64, kD}, v13)};
    EXPECT_EQ(run(whole_tile, n).data, std::vector<double>(kD, 2.0));
    // Causal needs Lq == Lkv; row 1 keeps both keys and no padding.
    Spec causal{bhld({1, 1, 2, kD}, zero), bhld({1, 1, 2, kD}, zero), bhld({1, 1, 2, kD}, v13)};
    causal.is_causal = true;
    EXPECT_EQ(run(causal, n).data[kD], 2.0);
  }
}

// block_active (power-of-2 program): with a mask it looks at the mask
// alone, so a tile causal empties for the query tile still runs (0 * V);
// the non-power-of-2 program runs every tile. v = inf at key 100 of 128.
TEST(TritonSdpa, OnlyThePowerOfTwoProgramSkipsTilesAndByTheMaskWhenThereIsOne) {
  auto zero = [](auto...) { return 0.0; };
  auto v = [](int64_t, int64_t, int64_t j, int64_t) { return j == 100 ? std::numeric_limits<double>::infinity() : 1.0; };
  // Causal, Lq = Lkv = 128: rows 0..63 (query tile 0) keep no key of tile 1.
  Spec causal{bhld({1, 1, 128, kD}, zero), bhld({1, 1, 128, kD}, zero), bhld({1, 1, 128, kD}, v)};
  causal.is_causal = true;
  EXPECT_TRUE(std::isfinite(run(causal).data[0])) << "causal alone: tile 1 skipped for rows 0..63";
  Spec both = causal;
  both.mask = keep_all(1, 128, 128);
  EXPECT_TRUE(std::isnan(run(both).data[0])) << "with a mask: tile 1 runs, 0 * inf";
  // D 3: one 128-key tile per 128 keys; a mask keeping keys 0..127 of 256.
  std::vector<int> first(256, 0);
  for (int j = 0; j < 128; ++j) first[j] = 1;
  auto v256 = [](int64_t, int64_t, int64_t j, int64_t) { return j == 200 ? std::numeric_limits<double>::infinity() : 1.0; };
  Spec odd{bhld({1, 1, 1, 3}, zero), bhld({1, 1, 256, 3}, zero), bhld({1, 1, 256, 3}, v256), bools({1, 1, 1, 256}, first)};
  EXPECT_TRUE(std::isnan(run(odd).data[0])) << "non-power-of-2: the masked tile runs";
  Spec pow2{bhld({1, 1, 1, kD}, zero), bhld({1, 1, 256, kD}, zero), bhld({1, 1, 256, kD}, v256),
            bools({1, 1, 1, 256}, first)};
  EXPECT_EQ(run(pow2).data, std::vector<double>(kD, 1.0)) << "power-of-2: the masked tiles are skipped";
}

TEST(TritonSdpa, EmulatedStaysWithinBf16OfExactAcrossTiles) {
  // 150 keys: three BLOCK_N = 64 tiles (power of 2) and two of 128 (D = 6).
  for (int64_t D : {kD, int64_t{6}}) {
    auto f = [](int64_t, int64_t h, int64_t l, int64_t e) { return std::sin(0.7 * l + 1.3 * e + h); };
    Spec c{bhld({1, 2, 150, D}, f), bhld({1, 2, 150, D}, f), bhld({1, 2, 150, D}, f)};
    c.is_causal = true;
    Tensor exact = run(c, Numerics::exact), emulated = run(c);
    for (size_t i = 0; i < exact.data.size(); ++i)
      ASSERT_NEAR(emulated.data[i], exact.data[i], 2e-2) << "D " << D << " element " << i;
  }
}

// tl.dot(q, tl.trans(k)) contracts over D in the power-of-2 program, and
// Triton's NVIDIA backend needs K >= 16 for bf16 operands: D 1, 2, 4, 8
// fail when the program compiles, after the wrapper's checks; the other
// program pads D to BLOCK_D >= 16 and compiles for every D.
TEST(TritonSdpa, APowerOfTwoDBelow16DoesNotCompile) {
  auto f = [](int64_t, int64_t, int64_t l, int64_t e) { return 0.25 * l - 0.125 * e; };
  auto call = [&](int64_t D) { return Spec{bhld({1, 1, 2, D}, f), bhld({1, 1, 3, D}, f), bhld({1, 1, 3, D}, f)}; };
  for (int64_t D : {1, 2, 4, 8})
    for (Numerics n : {Numerics::exact, Numerics::emulated})
      EXPECT_EQ(raised([&] { run(call(D), n); }),
                std::make_pair(KernelError::Kind::recoverable,
                               "CompilationError at tl.dot(q, tl.trans(k)) in _sdpa_fwd_kernel_body: AssertionError("
                               "'Input shapes should have M >= 1, N >= 1 and K >= 16') [K = " + std::to_string(D) + "]"))
          << "D " << D;
  for (int64_t D : {3, 5, 6, 7, 16, 32}) EXPECT_EQ(run(call(D)).shape, (Shape{1, 1, 2, D}));
  Spec dropout = call(8);
  dropout.dropout_p = 0.5;
  EXPECT_EQ(raised([&] { run(dropout); }).second, "dropout_p must be 0.0 (not supported in this implementation).");
  Spec mask = call(4);
  mask.mask = bools({1, 1, 1, 3}, {1, 1, 1});
  EXPECT_EQ(raised([&] { run(mask); }).second,
            "attn_mask shape mismatch: expected [B=1, 1, L_q=2, L_kv=3], got torch.Size([1, 1, 1, 3])");
  // A mask the checks pass but the model does not compute with: the program
  // compiles (or fails to) first.
  Spec rank5 = call(4);
  rank5.mask = bools({1, 1, 2, 3, 1}, std::vector<int>(6, 1));
  EXPECT_EQ(raised([&] { run(rank5); }).second.substr(0, 19), "CompilationError at");
  rank5.q = bhld({1, 1, 2, 16}, f);
  rank5.k = rank5.v = bhld({1, 1, 3, 16}, f);
  EXPECT_EQ(raised([&] { run(rank5); }).first, KernelError::Kind::unsupported);
}

TEST(TritonSdpa, ChecksInOrderWithUpstreamTexts) {
  auto f = [](auto...) { return 0.5; };
  auto call = [&](Shape q, Shape k, Shape v) { return Spec{bhld(q, f), bhld(k, f), bhld(v, f)}; };
  auto text = [&](const Spec& c) { return raised([&] { run(c); }).second; };
  Spec f32 = call({1, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 4});
  f32.k = bhld({1, 1, 2, 4}, f, DType::f32);
  EXPECT_EQ(text(f32), "Expected bfloat16 inputs");
  Spec rank2{bhld({1, 1, 2, 4}, f), Tensor(DType::bf16, {2, 4}), bhld({1, 1, 2, 4}, f)};
  EXPECT_EQ(text(rank2), "Expected 4D tensors shaped [B, H, L, D]; got query.dim()=4, key.dim()=2, value.dim()=4.");
  Spec dropout = call({1, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 4});
  dropout.dropout_p = 0.5;
  EXPECT_EQ(text(dropout), "dropout_p must be 0.0 (not supported in this implementation).");
  EXPECT_EQ(text(call({2, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 4})),
            "Batch dimension must match; got B_q=2, B_k=1, B_v=1.");
  EXPECT_EQ(text(call({1, 2, 2, 4}, {1, 2, 2, 4}, {1, 1, 2, 4})),
            "K and V head counts must match; got H_k=2, H_v=1.");
  Spec gqa = call({1, 3, 2, 4}, {1, 2, 2, 4}, {1, 2, 2, 4});
  gqa.enable_gqa = true;
  EXPECT_EQ(text(gqa), "GQA requires H_q divisible by H_kv; got H_q=3, H_kv=2.");
  EXPECT_EQ(text(call({1, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 8})),
            "Head dimension must match across Q, K, V; got D_q=4, D_k=4, D_v=8.");
  EXPECT_EQ(text(call({1, 1, 2, 4}, {1, 1, 3, 4}, {1, 1, 2, 4})),
            "Key and Value must have the same sequence length; got L_k=3, L_v=2.");
  Spec decode = call({1, 1, 1, 4}, {1, 1, 3, 4}, {1, 1, 3, 4});
  decode.is_causal = true;
  EXPECT_EQ(text(decode), "Causal masking requires L_q == L_kv; got L_q=1, L_kv=3. For decode (L_q < L_kv), "
                          "use an explicit bool mask instead.");
  Spec c = call({2, 1, 2, 3}, {2, 1, 3, 3}, {2, 1, 3, 3});
  c.mask = bhld({2, 1, 2, 3}, f, DType::f32);
  EXPECT_EQ(text(c), "attn_mask must have dtype torch.bool");
  c.mask = bools({2, 2, 2, 3}, std::vector<int>(24, 1));
  EXPECT_EQ(text(c), "attn_mask head dimension must be 1 (broadcast over heads); per-head masks are not "
                     "supported. Got attn_mask.shape=torch.Size([2, 2, 2, 3])");
  c.mask = bools({1, 1, 2, 3}, std::vector<int>(6, 1));  // no batch broadcast
  EXPECT_EQ(text(c), "attn_mask shape mismatch: expected [B=2, 1, L_q=2, L_kv=3], got torch.Size([1, 1, 2, 3])");
  c.mask = bools({2, 3}, std::vector<int>(6, 1));  // rank 2: shape[1] is L_kv
  EXPECT_EQ(text(c), "attn_mask head dimension must be 1 (broadcast over heads); per-head masks are not "
                     "supported. Got attn_mask.shape=torch.Size([2, 3])");
  // Two failures: the earlier check speaks.
  Spec both = call({2, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 4});
  both.dropout_p = 0.1;
  EXPECT_EQ(text(both), "dropout_p must be 0.0 (not supported in this implementation).");
  EXPECT_EQ(raised([&] { run(both); }).first, KernelError::Kind::recoverable);
}

}  // namespace
}  // namespace sdpa::cuda_triton
