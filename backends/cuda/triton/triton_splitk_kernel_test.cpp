#include "backends/cuda/triton/triton_splitk_kernel.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/cuda/triton/triton_test_util.h"

namespace sdpa::cuda_triton {
namespace {

using testing::bhld;
using testing::bools;
using testing::raised;
using Spec = testing::TritonCallSpec;

Tensor run(const Spec& c, Numerics n = Numerics::emulated, SplitKMax max = SplitKMax::fixed_phi) {
  return testing::run_triton(kTritonSplitKOp, triton_splitk_kernel(n, max), c);
}

// q = 10 e0, key j = score_j / 1.25 e0, so with the default scale 1/sqrt(64)
// key j scores score_j exactly; v[j][e] = v(j, e).
Spec decode(int64_t Lkv, double (*score)(int64_t), double (*v)(int64_t, int64_t)) {
  return {bhld({1, 1, 1, 64}, [](int64_t, int64_t, int64_t, int64_t e) { return e == 0 ? 10.0 : 0.0; }),
          bhld({1, 1, Lkv, 64}, [&](int64_t, int64_t, int64_t j, int64_t e) { return e == 0 ? score(j) / 1.25 : 0.0; }),
          bhld({1, 1, Lkv, 64}, [&](int64_t, int64_t, int64_t j, int64_t e) { return v(j, e); })};
}

double v_of(int64_t j, int64_t e) { return 0.25 * (j % 5) - 0.125 * (e % 3) + 1.0; }

TEST(TritonSplitK, NumSplits) {
  EXPECT_EQ(splitk_num_splits(1), 1);
  EXPECT_EQ(splitk_num_splits(256), 1);
  EXPECT_EQ(splitk_num_splits(257), 2);
  EXPECT_EQ(splitk_num_splits(300), 2);
  EXPECT_EQ(splitk_num_splits(256 * 128), 128);
  EXPECT_EQ(splitk_num_splits(256 * 128 + 1), 128);
}

TEST(TritonSplitK, ScoreAbovePhiPlus89OverflowsToNan) {
  // semantics §5 item 17: one key of 256 scores 100, the others 0; exp(100 - 5) is inf in f32.
  Spec c = decode(256, [](int64_t j) { return j == 7 ? 100.0 : 0.0; }, v_of);
  for (double x : run(c).data) EXPECT_FALSE(std::isfinite(x));
  Tensor exact = run(c, Numerics::exact);  // the intended result: v of key 7
  for (int64_t e = 0; e < 64; ++e) EXPECT_NEAR(exact.data[e], v_of(7, e), 1e-12);
}

TEST(TritonSplitK, ScoresFarBelowPhiUnderflowToZero) {
  // Every score -100: exp(-105) flushes to 0, l = 0, so the row is 0; the softmax is uniform.
  Spec c = decode(256, [](int64_t) { return -100.0; }, v_of);
  for (double x : run(c).data) EXPECT_EQ(x, 0.0);
  Tensor exact = run(c, Numerics::exact);
  for (int64_t e = 0; e < 64; ++e) {
    double mean = 0;
    for (int64_t j = 0; j < 256; ++j) mean += v_of(j, e) / 256;
    EXPECT_NEAR(exact.data[e], mean, 1e-12);
  }
}

TEST(TritonSplitK, TwoSplitsMatchExactWithinBf16) {
  // Lkv 300: 2 splits of 150 keys, each summed in BLOCK_N = 64 tiles, then reduced.
  auto f = [](int64_t, int64_t h, int64_t l, int64_t e) { return std::sin(0.37 * l + 1.1 * e + h); };
  Spec c{bhld({1, 2, 1, 64}, f), bhld({1, 2, 300, 64}, f), bhld({1, 2, 300, 64}, f)};
  Tensor exact = run(c, Numerics::exact), emulated = run(c);
  for (size_t i = 0; i < exact.data.size(); ++i) {
    // P rounded to bf16 costs up to 2^-9 of sum p |v| <= 1; the output rounding one ulp.
    const double bf16_ulp = std::ldexp(1.0, std::ilogb(std::fabs(exact.data[i])) - 7);
    ASSERT_NEAR(emulated.data[i], exact.data[i], 2 * bf16_ulp + 4e-3) << "element " << i;
  }
}

TEST(TritonSplitK, RunningMaxVariantNeitherOverflowsNorUnderflows) {
  Spec high = decode(256, [](int64_t j) { return j == 7 ? 100.0 : 0.0; }, v_of);
  // 2 splits of 150 keys with maxima -100 and -90: the reduce rescales split 0 by exp(-10).
  Spec low = decode(300, [](int64_t j) { return j < 150 ? -100.0 : -90.0; },
                    [](int64_t j, int64_t) { return j < 150 ? 1.0 : 2.0; });
  for (double x : run(low).data) EXPECT_EQ(x, 0.0);  // fixed phi: exp(-95) flushes to 0
  Tensor h = run(high, Numerics::emulated, SplitKMax::running_max);
  Tensor l = run(low, Numerics::emulated, SplitKMax::running_max), l_exact = run(low, Numerics::exact);
  for (int64_t e = 0; e < 64; ++e) {
    EXPECT_NEAR(h.data[e], v_of(7, e), 1e-2);
    EXPECT_NEAR(l.data[e], l_exact.data[e], 1e-2);
    EXPECT_NEAR(l.data[e], 2.0, 1e-2);  // split 1 dominates; not the fixed phi's 0, not 1.5 unscaled
  }
}

TEST(TritonSplitK, CausalIgnoredMaskReadFromRowZero) {
  // Keys 0..9 score 0 with v = 1; keys 10.. score 50 with v = 100 (exp(45) is finite).
  Spec c = decode(256, [](int64_t j) { return j < 10 ? 0.0 : 50.0; },
                  [](int64_t j, int64_t) { return j < 10 ? 1.0 : 100.0; });
  c.is_causal = true;  // a no-op: math with causal would give v[0]; split-K attends to every key
  Tensor all = run(c);
  EXPECT_NEAR(all.data[0], 100.0, 0.5);
  std::vector<int> keep(256, 0);
  for (int j = 0; j < 10; ++j) keep[j] = 1;
  c.mask = bools({1, 1, 1, 256}, keep);
  EXPECT_NEAR(run(c).data[0], 1.0, 1e-2);
  c.mask = bools({1, 1, 1, 256}, std::vector<int>(256, 0));  // nothing visible: total 0, so 0
  EXPECT_EQ(run(c).data[0], 0.0);
  EXPECT_EQ(run(c, Numerics::exact).data[0], 0.0);
}

TEST(TritonSplitK, MqaRunsWithoutEnableGqa) {
  // Hq 4, Hkv 1, enable_gqa False: only H_q % H_kv is checked (triton.sdpa would raise).
  auto f = [](int64_t, int64_t h, int64_t l, int64_t e) { return std::cos(0.3 * l + e + h); };
  Spec c{bhld({1, 4, 1, 16}, f), bhld({1, 1, 256, 16}, f), bhld({1, 1, 256, 16}, f)};
  Tensor exact = run(c, Numerics::exact), emulated = run(c);
  for (size_t i = 0; i < exact.data.size(); ++i) EXPECT_NEAR(emulated.data[i], exact.data[i], 1e-2);
}

TEST(TritonSplitK, ChecksWithUpstreamTexts) {
  auto f = [](auto...) { return 0.5; };
  auto call = [&](Shape q, Shape kv) { return Spec{bhld(q, f), bhld(kv, f), bhld(kv, f)}; };
  auto text = [&](const Spec& c) { return raised([&] { run(c); }).second; };
  Spec dropout = call({1, 1, 2, 4}, {1, 1, 8, 4});
  dropout.dropout_p = 0.5;  // _validate_sdpa_inputs first
  EXPECT_EQ(text(dropout), "dropout_p must be 0.0 (not supported in this implementation).");
  EXPECT_EQ(text(call({1, 1, 2, 4}, {1, 1, 8, 4})), "sdpa_decode_splitk requires L_q == 1 (decode); got L_q=2");
  EXPECT_EQ(text(call({1, 3, 1, 4}, {1, 2, 8, 4})), "H_q must be divisible by H_kv; got H_q=3, H_kv=2");
  EXPECT_EQ(text(call({1, 1, 1, 6}, {1, 1, 8, 6})), "sdpa_decode_splitk requires power-of-2 head dim; got D=6");
  Spec mask = call({1, 1, 1, 4}, {1, 1, 8, 4});
  mask.mask = bools({1, 1, 2, 8}, std::vector<int>(16, 1));
  EXPECT_EQ(text(mask), "attn_mask shape mismatch: expected [B=1, 1, L_q=1, L_kv=8], got torch.Size([1, 1, 2, 8])");
  EXPECT_EQ(raised([&] { run(mask); }).first, KernelError::Kind::recoverable);
}

// Its tl.dot(q, tl.trans(k)) contracts over D: a power-of-2 D below 16
// passes every check of the wrapper and fails when the program compiles.
TEST(TritonSplitK, APowerOfTwoDBelow16DoesNotCompile) {
  auto f = [](int64_t, int64_t h, int64_t l, int64_t e) { return std::cos(0.3 * l + e + h); };
  for (int64_t D : {1, 2, 4, 8})
    EXPECT_EQ(raised([&] { run({bhld({1, 1, 1, D}, f), bhld({1, 1, 256, D}, f), bhld({1, 1, 256, D}, f)}); }),
              std::make_pair(KernelError::Kind::recoverable,
                             "CompilationError at tl.dot(q, tl.trans(k)) in _sdpa_decode_splitk_kernel: "
                             "AssertionError('Input shapes should have M >= 1, N >= 1 and K >= 16') [K = " +
                                 std::to_string(D) + "]"));
  // Key and value of another shape than query's read out of bounds when
  // the program runs: after it compiles (or fails to).
  EXPECT_EQ(raised([&] { run({bhld({1, 1, 1, 8}, f), bhld({1, 1, 256, 16}, f), bhld({1, 1, 256, 16}, f)}); })
                .second.substr(0, 19),
            "CompilationError at");
  EXPECT_EQ(raised([&] { run({bhld({1, 1, 1, 16}, f), bhld({1, 1, 256, 32}, f), bhld({1, 1, 256, 32}, f)}); })
                .first,
            KernelError::Kind::unsupported);
  EXPECT_EQ(run({bhld({1, 1, 1, 16}, f), bhld({1, 1, 256, 16}, f), bhld({1, 1, 256, 16}, f)}).shape,
            (Shape{1, 1, 1, 16}));
}

}  // namespace
}  // namespace sdpa::cuda_triton
