// The real XNNPACK operators (Debian libxnnpack-dev) against double-precision references.
#include "backends/xnnpack/xnn/xnnpack_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <thread>

#include "backends/xnnpack/xnn/half.h"
#include "backends/xnnpack/xnn/xnnpack_sdpa_model.h"

namespace sdpa::xnnpack {
namespace {

constexpr double kU32 = 0x1p-24;  // unit roundoff of f32
constexpr double kU16 = 0x1p-11;  // unit roundoff of f16

FloatTensor random_tensor(std::vector<int64_t> shape, std::mt19937& rng, float lo = -2.0f, float hi = 2.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  FloatTensor t{std::move(shape), std::vector<float>(static_cast<size_t>(n))};
  for (float& x : t.data) x = dist(rng);
  return t;
}

FloatTensor rounded_to_half(FloatTensor t) {
  for (float& x : t.data) x = round_to_half(x);
  return t;
}

// c = a x bt^T in double, with sum |a||b| per element (the scale of the rounding error).
struct Reference {
  std::vector<double> value, magnitude;
};
Reference reference_bmm_nt(const FloatTensor& a, const FloatTensor& bt) {
  const int64_t B = a.shape[0], M = a.shape[1], K = a.shape[2], N = bt.shape[1];
  Reference r{std::vector<double>(B * M * N), std::vector<double>(B * M * N)};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0, m = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double p = double(a.data[(b * M + i) * K + k]) * double(bt.data[(b * N + j) * K + k]);
          s += p;
          m += std::fabs(p);
        }
        r.value[(b * M + i) * N + j] = s;
        r.magnitude[(b * M + i) * N + j] = m;
      }
  return r;
}

FloatTensor transposed(const FloatTensor& t) {  // [B, R, C] -> [B, C, R]
  const int64_t B = t.shape[0], R = t.shape[1], C = t.shape[2];
  FloatTensor out{{B, C, R}, std::vector<float>(t.data.size())};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) out.data[(b * C + c) * R + r] = t.data[(b * R + r) * C + c];
  return out;
}

// Largest |c - ref| / (u * sum|a||b|) over the elements: the error in units of
// the rounding scale. Any summation order of K products with one rounding per
// step keeps it below gamma_K / u = K / (1 - K u) (Higham, Thm 3.1).
double error_in_units(const FloatTensor& c, const Reference& ref, double u) {
  double worst = 0;
  for (size_t i = 0; i < c.data.size(); ++i)
    if (ref.magnitude[i] > 0) worst = std::max(worst, std::fabs(c.data[i] - ref.value[i]) / (u * ref.magnitude[i]));
  return worst;
}

TEST(XnnpackOps, BmmF32OfAttentionScoresIsWithinGammaK) {
  // q [B*H = 6, Lq = 5, D = 64] x k^T, k [6, Lkv = 9, 64]; and the same through bmm with k^T materialized.
  std::mt19937 rng(1);
  const FloatTensor q = random_tensor({6, 5, 64}, rng), k = random_tensor({6, 9, 64}, rng);
  const Reference ref = reference_bmm_nt(q, k);
  const FloatTensor scores = bmm_transposed_b(q, k);
  ASSERT_EQ(scores.shape, (std::vector<int64_t>{6, 5, 9}));
  EXPECT_EQ(bmm(q, transposed(k)).data, scores.data);  // the same kernel either way
  const double units = error_in_units(scores, ref, kU32);
  const double K = 64;
  EXPECT_LE(units, K / (1 - K * kU32));
  // Measured here: under 2 units (sequential FMA accumulation); 64 is the worst case.
  EXPECT_LE(units, 4.0) << "far above this machine's measured error: a different kernel or a broken bmm";
  RecordProperty("f32_error_units", std::to_string(units));
}

TEST(XnnpackOps, BmmF32EqualsTheModelledGemmBitForBit) {
  // xnnpack_gemm_model (one f32 FMA per k step, in order) is exactly what the x86 FMA kernels compute.
  if (!__builtin_cpu_supports("fma")) GTEST_SKIP() << "no FMA3: XNNPACK picks a non-fused f32 GEMM";
  std::mt19937 rng(2);
  for (int64_t K : {1, 3, 17, 64, 130}) {
    const FloatTensor a = random_tensor({2, 9, K}, rng), bt = random_tensor({2, 11, K}, rng);
    const FloatTensor c = bmm_transposed_b(a, bt);
    for (int64_t b = 0; b < 2; ++b) {
      const std::vector<float> ab(a.data.begin() + b * 9 * K, a.data.begin() + (b + 1) * 9 * K);
      const std::vector<float> wb(bt.data.begin() + b * 11 * K, bt.data.begin() + (b + 1) * 11 * K);
      const std::vector<float> model = xnnpack_gemm_model(ab, wb, 9, 11, K, Precision::f32);
      EXPECT_EQ(std::vector<float>(c.data.begin() + b * 99, c.data.begin() + (b + 1) * 99), model) << "K " << K;
    }
  }
}

TEST(XnnpackOps, BmmF16RoundsTheAccumulatorAfterEveryStep) {
  if (!f16_supported()) GTEST_SKIP() << "this XNNPACK reports no fp16 support on this CPU";
  std::mt19937 rng(3);
  const FloatTensor q = rounded_to_half(random_tensor({4, 5, 64}, rng)), k = rounded_to_half(random_tensor({4, 7, 64}, rng));
  const FloatTensor scores = bmm_transposed_b(q, k, Precision::f16);
  // Semantics §4.3 / §5 item 19: the x86 f16 GEMM rounds its f32 FMA result to fp16 after every k step.
  for (int64_t b = 0; b < 4; ++b) {
    const std::vector<float> qb(q.data.begin() + b * 5 * 64, q.data.begin() + (b + 1) * 5 * 64);
    const std::vector<float> kb(k.data.begin() + b * 7 * 64, k.data.begin() + (b + 1) * 7 * 64);
    EXPECT_EQ(std::vector<float>(scores.data.begin() + b * 35, scores.data.begin() + (b + 1) * 35),
              xnnpack_gemm_model(qb, kb, 5, 7, 64, Precision::f16));
  }
  // Against double: each of the K steps rounds to f32 then to f16, so the error is below K (u16 + u32) sum|ab|.
  const double units = error_in_units(scores, reference_bmm_nt(q, k), kU16 + kU32);
  EXPECT_LE(units, 64.0);
  EXPECT_GT(units, 0.0);  // f16 accumulation is not exact on these inputs
  RecordProperty("f16_error_units", std::to_string(units));
  // An f32-accumulating kernel would be within 2 f16 roundings of the reference; this one is not.
  double worst_f16_ulps = 0;
  const Reference ref = reference_bmm_nt(q, k);
  for (size_t i = 0; i < scores.data.size(); ++i)
    worst_f16_ulps = std::max(worst_f16_ulps, std::fabs(scores.data[i] - ref.value[i]) /
                                                  (kU16 * std::max(std::fabs(ref.value[i]), 0x1p-14)));
  EXPECT_GT(worst_f16_ulps, 2.0);
}

TEST(XnnpackOps, BmmRejectsZeroChannelsWithTheStatusName) {
  std::mt19937 rng(4);
  const FloatTensor a = random_tensor({2, 3, 0}, rng), b = random_tensor({2, 0, 4}, rng);
  try {
    bmm(a, b);
    FAIL() << "K = 0 accepted";
  } catch (const XnnpackError& e) {
    EXPECT_EQ(e.op, "xnn_create_fully_connected_nc_f32");
    EXPECT_EQ(e.status, 2);
    EXPECT_EQ(e.status_name, "xnn_status_invalid_parameter");
    EXPECT_NE(std::string(e.what()).find("xnn_status_invalid_parameter"), std::string::npos) << e.what();
  }
  try {  // N = 0, in f16: [2, 3, 3] x [2, 3, 0]
    bmm(random_tensor({2, 3, 3}, rng), FloatTensor{{2, 3, 0}, {}}, Precision::f16);
    FAIL() << "N = 0 accepted";
  } catch (const XnnpackError& e) {
    EXPECT_EQ(e.op, "xnn_create_fully_connected_nc_f16");
    EXPECT_EQ(e.status_name, f16_supported() ? "xnn_status_invalid_parameter" : "xnn_status_unsupported_hardware");
  }
  // API misuse is not an XNNPACK status.
  EXPECT_THROW(bmm(random_tensor({2, 3, 4}, rng), random_tensor({2, 5, 4}, rng)), std::invalid_argument);
  EXPECT_THROW(bmm(FloatTensor{{1, 1, 2}, {1.0f}}, random_tensor({1, 2, 1}, rng)), std::invalid_argument);
}

TEST(XnnpackOps, StatusNames) {
  EXPECT_EQ(xnn_status_name(0), "xnn_status_success");
  EXPECT_EQ(xnn_status_name(4), "xnn_status_unsupported_parameter");
  EXPECT_EQ(xnn_status_name(6), "xnn_status_out_of_memory");
  EXPECT_EQ(xnn_status_name(42), "xnn_status_42");
  EXPECT_STRNE(xnnpack_package_version(), "unknown");
}

// Softmax over rows in double; all -inf rows give NaN (as the f32 operator does: max - max = NaN).
std::vector<double> reference_softmax(const FloatTensor& x) {
  const int64_t n = x.shape.back(), rows = static_cast<int64_t>(x.data.size()) / n;
  std::vector<double> p(x.data.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < n; ++j) m = std::max(m, double(x.data[r * n + j]));
    for (int64_t j = 0; j < n; ++j) s += std::exp(double(x.data[r * n + j]) - m);
    for (int64_t j = 0; j < n; ++j) p[r * n + j] = std::exp(double(x.data[r * n + j]) - m) / s;
  }
  return p;
}

TEST(XnnpackOps, SoftmaxF32MatchesDoubleWithinItsRoundingBound) {
  // Relative error of p_j, in units of u: |x_j - max| (x_j - max is rounded to f32 before exp: an
  // absolute error u |x_j - max| in the exponent), a few ulp for exp's polynomial, n - 1 roundings in
  // the sum, one for 1/sum, one for the product: u (|x_j - max| + n + 8).
  std::mt19937 rng(5);
  for (int64_t n : {1, 7, 33, 200}) {
    FloatTensor x = random_tensor({3, 4, n}, rng, -30.0f, 30.0f);
    const FloatTensor p = softmax_last_dim(x);
    const std::vector<double> ref = reference_softmax(x);
    double worst = 0;  // the error over the bound, largest
    for (size_t r = 0; r < ref.size() / n; ++r) {
      const double m = *std::max_element(x.data.begin() + r * n, x.data.begin() + (r + 1) * n);
      for (size_t j = r * n; j < (r + 1) * n; ++j) {
        const double bound = kU32 * ref[j] * (std::fabs(x.data[j] - m) + double(n) + 8);
        worst = std::max(worst, std::fabs(p.data[j] - ref[j]) / bound);
      }
    }
    EXPECT_LE(worst, 1.0) << "n " << n;
    RecordProperty("softmax_error_over_bound_n" + std::to_string(n), std::to_string(worst));
  }
}

TEST(XnnpackOps, SoftmaxF32FullyMinusInfRowIsMinusInfInThisVersion) {
  // Semantics §4.3 derives NaN for an all -inf row (max - max = NaN, and the later kernels clamp with
  // max(min, x), which keeps NaN). This February 2022 library clamps 1/sum's product with max(x, min),
  // which turns NaN into the lower clamp bound -inf; the fully-connected operator does the same.
  const float inf = std::numeric_limits<float>::infinity();
  const FloatTensor x{{3, 4}, {-inf, -inf, -inf, -inf, 0.0f, -inf, 0.0f, -inf, 1.0f, 2.0f, 3.0f, 4.0f}};
  const FloatTensor p = softmax_last_dim(x);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(p.data[j], -inf) << j;
  EXPECT_EQ(p.data[4], 0.5f);
  EXPECT_EQ(p.data[5], 0.0f);
  EXPECT_EQ(p.data[7], 0.0f);
  EXPECT_TRUE(std::isfinite(p.data[8]));
  const FloatTensor nan_in{{1, 1, 2}, {std::numeric_limits<float>::quiet_NaN(), 1.0f}};
  EXPECT_EQ(bmm_transposed_b(nan_in, FloatTensor{{1, 1, 2}, {1.0f, 1.0f}}).data[0], -inf);
}

TEST(XnnpackOps, SoftmaxRejectsZeroChannels) {
  try {
    softmax_last_dim(FloatTensor{{3, 0}, {}});
    FAIL() << "channels = 0 accepted";
  } catch (const XnnpackError& e) {
    EXPECT_EQ(e.op, "xnn_create_softmax_nc_f32");
    EXPECT_EQ(e.status_name, "xnn_status_invalid_parameter");
  }
}

TEST(XnnpackOps, MultiplyBroadcastsExactly) {
  // One rounding of an exact product: fl32(a * b) in f32, and fp16(a16 * b16) in f16 (the product of two fp16 values is exact in f32).
  std::mt19937 rng(6);
  const FloatTensor a = random_tensor({2, 3, 4}, rng), b = random_tensor({3, 1}, rng), c = random_tensor({4}, rng);
  const FloatTensor ab = multiply(a, b);
  ASSERT_EQ(ab.shape, (std::vector<int64_t>{2, 3, 4}));
  const FloatTensor ac = multiply(c, a);
  ASSERT_EQ(ac.shape, (std::vector<int64_t>{2, 3, 4}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) {
        const size_t at = (i * 3 + j) * 4 + k;
        EXPECT_EQ(ab.data[at], float(double(a.data[at]) * double(b.data[j])));
        EXPECT_EQ(ac.data[at], float(double(a.data[at]) * double(c.data[k])));
      }
  if (!f16_supported()) GTEST_SKIP() << "no fp16";
  const FloatTensor h = multiply(a, b, Precision::f16);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) {
        const size_t at = (i * 3 + j) * 4 + k;
        EXPECT_EQ(h.data[at], round_to_half(round_to_half(a.data[at]) * round_to_half(b.data[j])));
      }
}

TEST(XnnpackOps, MultiplyRejectsShapesXnnpackRejects) {
  std::mt19937 rng(7);
  try {
    multiply(random_tensor({2, 3}, rng), random_tensor({4, 3}, rng));
    FAIL() << "[2, 3] * [4, 3] accepted";
  } catch (const XnnpackError& e) {
    EXPECT_EQ(e.op, "xnn_setup_multiply_nd_f32");
    EXPECT_EQ(e.status_name, "xnn_status_invalid_parameter");
  }
  try {
    multiply(random_tensor({1, 1, 1, 1, 1, 1, 2}, rng), random_tensor({2}, rng));
    FAIL() << "rank 7 accepted";
  } catch (const XnnpackError& e) {
    EXPECT_EQ(e.op, "xnn_setup_multiply_nd_f32");
    EXPECT_EQ(e.status_name, "xnn_status_unsupported_parameter");
  }
}

TEST(XnnpackOps, ConcurrentFirstUseIsSafe) {
  // Initialization is a magic static: threads racing to the first call all see an initialized library.
  std::vector<std::thread> threads;
  std::vector<float> results(8);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([t, &results] {
      const FloatTensor p = softmax_last_dim(FloatTensor{{1, 2}, {float(t), float(t)}});
      results[t] = p.data[0];
    });
  for (auto& th : threads) th.join();
  for (float r : results) EXPECT_EQ(r, 0.5f);
}

}  // namespace
}  // namespace sdpa::xnnpack
