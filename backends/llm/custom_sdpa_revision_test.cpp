// llama.custom_sdpa's model on earlier ExecuTorch trees (option
// executorch): the float-only checks, the mask of q's dtype, and the NaN
// of a kv block with no kept key yet.
#include "backends/llm/custom_sdpa_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace sdpa::llm {
namespace {

using namespace custom_sdpa_test;

// Before 411a01e1b9 (2026-07-08) the kernel ran Float and Char queries only.
TEST(CustomSdpaRevision, BeforeJuly2026TheKernelTakesFloatQueriesOnly) {
  auto one = [](int64_t, int64_t, int64_t) { return 1.0; };
  for (DType t : {DType::bf16, DType::f16}) {
    Tensor x = bshd(t, 1, 1, 1, one);
    EXPECT_EQ(direct_error(x, x, x, revision("2026-07-07")),
              std::make_pair(KernelError::Kind::recoverable, std::string("Query must be Float type; Invalid arguments")))
        << dtype_name(t);
    EXPECT_EQ(direct_error(x, x, x, revision("main")).second, "no error") << dtype_name(t);
  }
  Tensor f64 = bshd(DType::f64, 1, 1, 1, one), f32 = bshd(DType::f32, 1, 1, 1, one);
  EXPECT_EQ(direct_error(f64, f64, f64, revision("2026-07-07")).second, "Query must be Float type; Invalid arguments");
  EXPECT_EQ(direct_error(f32, f32, f32, revision("2025-07-01")).second, "no error");
  Tensor i8 = bshd(DType::i8, 1, 1, 1, one);
  EXPECT_EQ(direct_error(i8, i8, i8, revision("2025-07-01")).second, "Query must be Float type; Invalid arguments");
  EXPECT_NE(direct_error(i8, i8, i8, revision("2026-07-07")).second, "Query must be Float type; Invalid arguments");
}

// Before 9905026101 (2025-07-02) the mask had q's dtype, checked under the
// rank check's text; since then it is Float whatever q is.
TEST(CustomSdpaRevision, BeforeJuly2025TheMaskHasTheQuerysDtypeUnderTheRankChecksText) {
  Tensor q = bshd(DType::f32, 2, 1, 1, qf), k = bshd(DType::f32, 2, 1, 1, kf), v = bshd(DType::f32, 2, 1, 1, vf);
  Call half{q, k, v, tensor(DType::f16, {2, 2}, {0, 0, 0, 0})};
  EXPECT_EQ(error_of(half, revision("2025-07-01")),
            std::make_pair(KernelError::Kind::recoverable,
                           std::string("Attention mask must be a 2D tensor; Invalid arguments")));
  EXPECT_EQ(error_of(half, revision("2026-07-07")).second, "Attention mask must be a Float tensor; Invalid arguments");
  Call single{q, k, v, tensor(DType::f32, {2, 2}, {0, 0, 0, 0})};
  EXPECT_EQ(error_of(single, revision("2025-07-01")).second, "no error");
  EXPECT_EQ(run(single, Numerics::emulated, {}, 1, revision("2025-07-01")).data, run(single).data);
}

// Before f3e8972de6 (2025-04-25) no kv block was skipped: a block where
// the row's running max is still -inf goes through exp(-inf - -inf). One
// query row over 520 keys, the first block's 512 masked: main attends the
// last 8 keys, the earlier tree gives NaN. With a finite first block both
// trees agree.
TEST(CustomSdpaRevision, BeforeApril2025AFirstBlockWithNoKeptKeyTurnsTheRowNan) {
  auto ramp = [](int64_t s, int64_t, int64_t) { return 0.001 * static_cast<double>(s % 7); };
  Call c{bshd(DType::f32, 1, 1, 1, qf), bshd(DType::f32, 520, 1, 1, ramp), bshd(DType::f32, 520, 1, 1, ramp)};
  Tensor mask(DType::f32, {1, 520});
  for (int64_t j = 0; j < 512; ++j) mask.data[j] = -INFINITY;
  c.mask = mask;
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    EXPECT_TRUE(std::isfinite(run(c, n).data[0]));
    EXPECT_TRUE(std::isnan(run(c, n, {}, 1, revision("2025-04-24")).data[0]));
    EXPECT_FALSE(std::isnan(run(c, n, {}, 1, revision("2025-07-01")).data[0]));
  }
  c.mask->data[0] = 0.0;  // one kept key in the first block
  EXPECT_EQ(run(c, Numerics::emulated, {}, 1, revision("2025-04-24")).data, run(c).data);
}

// The same tree, Lq = 33 on one thread: row 32's keys are all masked. Main
// skips its block and keeps row 0's sum (0 out, the test below); the
// earlier tree gives NaN, and a third query block's row 0 (Lq = 65: rows
// 32 and 64 share row index 0 of their blocks) inherits that NaN sum.
TEST(CustomSdpaRevision, BeforeApril2025AFullyMaskedRowIsNanAndItsSumCarriesOn) {
  const Call c = row_32_masked(65);
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    const Tensor now = run(c, n), before = run(c, n, {}, 1, revision("2025-04-24"));
    EXPECT_EQ(now.data[32], 0.0);
    EXPECT_TRUE(std::isfinite(now.data[64]));
    EXPECT_TRUE(std::isnan(before.data[32]));
    EXPECT_TRUE(std::isnan(before.data[64]));
    EXPECT_EQ(before.data[0], now.data[0]);
  }
}

// The dropped NaN gives a finite row only because the block is then
// skipped (f3e8972de6): in the tree before it, exp(NaN - -inf) keeps the NaN
// in the row, as aten does.
TEST(CustomSdpaRevision, BeforeApril2025TheDroppedNanStillReachesTheRow) {
  for (Numerics n : {Numerics::emulated, Numerics::exact}) {
    Tensor out = run(nan_in_first_block(3), n, {}, 1, revision("2025-04-24"));
    EXPECT_TRUE(std::isnan(out.data[0]));
    EXPECT_TRUE(std::isnan(out.data[519]));
  }
}

}  // namespace
}  // namespace sdpa::llm
