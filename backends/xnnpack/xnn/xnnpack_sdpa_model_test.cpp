// The model of XNNPACK's removed SDPA operator: validation rules and messages,
// semantics (§4, §5 items 18-19), and agreement with a plain double reference.
#include "backends/xnnpack/xnn/xnnpack_sdpa_model.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "backends/xnnpack/xnn/half.h"

namespace sdpa::xnnpack {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

FloatTensor filled(std::vector<int64_t> shape, const std::function<float(int64_t)>& f) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  FloatTensor t{std::move(shape), std::vector<float>(static_cast<size_t>(n))};
  for (int64_t i = 0; i < n; ++i) t.data[i] = f(i);
  return t;
}

float wave(int64_t i) { return static_cast<float>(std::sin(0.7 * double(i) + 0.3)); }

// §5 item 18: q[1,2,3,4], k[1,2,5,4], v[1,2,5,6], scale[4], mask[3,5].
SdpaOperatorCall base_call() {
  return {filled({1, 2, 3, 4}, wave), filled({1, 2, 5, 4}, [](int64_t i) { return wave(i + 100); }),
          filled({1, 2, 5, 6}, [](int64_t i) { return wave(i + 200); }), filled({4}, [](int64_t) { return 0.5f; }),
          filled({3, 5}, [](int64_t) { return 0.0f; })};
}

// ---- A plain double reference of the operator's meaning, and the bound the model must meet.

struct Reference {
  std::vector<double> out;    // NaN for a row whose logits are all -inf (the operator's result)
  std::vector<double> bound;  // |model - out| allowed, derived from the case
};

// Per row: logits L = cap(sum_c q s k) + mask, in double. Rounding error in
// the model, first order, with u the unit roundoff of one step (f16: 2^-11 +
// 2^-24, a step rounds to f32 then to f16) and eta the absolute error of a
// step whose result underflows into the subnormals (half their spacing: f16
// 2^-25, f32 2^-150; a sum of subnormals is exact, a product or exp is not):
//   |dL|  <= (C + 2) u sum_c |q s k|   (the Q*scale rounding, C GEMM steps)
//          + u |L|                      (mask add)
//          + 8 u cap + 3 u |S|          (tanh cap: three roundings, tanh's few ulp, f16 cap and 1/cap rounded)
//          + eta (sum_c |k| + C + 2 + (2 cap + 1))   (underflow of Q*scale, the GEMM steps, the cap's steps)
//   |dp|/p <= expm1(2 max |dL|) + (U + 8) u   (exp's few ulp, U sum steps, 1/sum, e*r, e rounded)
//   |dp|   += 2 eta                     (e and e*r rounded below the normals: p is absolute there)
//   |dO|  <= 1.25 (|dp|/p + (U + 2) u) sum_u p |V| + eta (2 sum_u |V| + U)   (the P V GEMM; 1.25 covers
//                                       second-order terms; eta per p and per GEMM step)
// In f16, exp is 0 below the cutoff (the f16 raddstoreexpminusmax kernels
// store no subnormal weight): a key whose L - max lies below the cutoff,
// give or take 2 max |dL|, may lose its weight p (up to 2^-14 each) and
// leave the others larger by the weight lost, F / sum:
//   |dO|  += 1.25 (sum_flushed p |V| + (F / sum) sum_u p |V|)
constexpr double kF16ExpCutoff = -0x1.368p+3;  // -9.703125: e^x below it is not a normal fp16

Reference reference_sdpa(const SdpaOperatorCall& call) {
  const bool f16 = call.precision == Precision::f16;
  const double u = f16 ? 0x1p-11 + 0x1p-24 : 0x1p-24;
  const double eta = f16 ? 0x1p-25 : 0x1p-150;
  const auto in = [&](const FloatTensor& t, size_t i) { return double(f16 ? round_to_half(t.data[i]) : t.data[i]); };
  const auto& qs = call.query.shape;
  const bool mqa = call.key.shape.size() == qs.size() - 1;
  const int64_t H = qs[qs.size() - 3], T = qs[qs.size() - 2], C = qs.back();
  const int64_t U = call.key.shape[call.key.shape.size() - 2], D = call.value.shape.back();
  int64_t batch = 1;
  for (size_t i = 0; i + 3 < qs.size(); ++i) batch *= qs[i];
  const double cap = call.cap;
  Reference r{std::vector<double>(batch * H * T * D), std::vector<double>(batch * H * T * D)};
  std::vector<double> L(U), dL(U), p(U);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kv = mqa ? b : b * H + h;
      for (int64_t t = 0; t < T; ++t) {
        double m = -INFINITY;
        for (int64_t j = 0; j < U; ++j) {
          double s = 0, a = 0, k_abs = 0;
          for (int64_t c = 0; c < C; ++c) {
            const double k = in(call.key, (kv * U + j) * C + c);
            const double term = in(call.query, ((b * H + h) * T + t) * C + c) * in(call.scale, c) * k;
            s += term;
            a += std::fabs(term);
            k_abs += std::fabs(k);
          }
          double capped = s, cap_error = 0;
          if (call.cap_type == LogitsCap::tanh) {
            capped = cap * std::tanh(s / cap);
            cap_error = 8 * u * cap + 3 * u * std::fabs(s) + eta * (2 * cap + 1);
          }
          L[j] = capped + in(call.mask, t * U + j);
          dL[j] = (C + 2) * u * a + u * std::fabs(L[j]) + eta * (k_abs + C + 2) + cap_error;
          m = std::max(m, L[j]);
        }
        const size_t o = ((b * H + h) * T + t) * D;
        if (m == -INFINITY) {
          for (int64_t d = 0; d < D; ++d) r.out[o + d] = r.bound[o + d] = NAN;
          continue;
        }
        double sum = 0, max_dL = 0;
        for (int64_t j = 0; j < U; ++j) {
          p[j] = std::exp(L[j] - m);
          sum += p[j];
          if (L[j] > -INFINITY) max_dL = std::max(max_dL, dL[j]);
        }
        const double rel_p = std::expm1(2 * max_dL) + (U + 8) * u;
        // The keys f16's exp cutoff may zero, and the weight they hold.
        const auto flushed = [&](int64_t j) { return f16 && L[j] - m < kF16ExpCutoff + 2 * max_dL; };
        double F = 0;
        for (int64_t j = 0; j < U; ++j)
          if (flushed(j)) F += p[j];
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0, w = 0, v_abs = 0, w_flushed = 0;
          for (int64_t j = 0; j < U; ++j) {
            const double v = in(call.value, (kv * U + j) * D + d);
            acc += p[j] / sum * v;
            w += p[j] / sum * std::fabs(v);
            v_abs += std::fabs(v);
            if (flushed(j)) w_flushed += p[j] / sum * std::fabs(v);
          }
          r.out[o + d] = acc;
          r.bound[o + d] = 1.25 * (rel_p + (U + 2) * u) * w + eta * (2 * v_abs + U) +
                           1.25 * (w_flushed + F / sum * w);
        }
      }
    }
  return r;
}

// The elements where `got` is outside the reference's bound (or NaN where it is not, or the reverse).
std::vector<size_t> violations(const FloatTensor& got, const Reference& ref) {
  std::vector<size_t> bad;
  for (size_t i = 0; i < ref.out.size(); ++i) {
    const bool nan_ref = std::isnan(ref.out[i]), nan_got = std::isnan(got.data[i]);
    if (nan_ref != nan_got || (!nan_ref && !(std::fabs(got.data[i] - ref.out[i]) <= ref.bound[i]))) bad.push_back(i);
  }
  return bad;
}

// ---- Validation (semantics §4.1, §5 item 18): the first failing check, its function and its upstream text.

XnnpackError error_of(const SdpaOperatorCall& call) {
  try {
    xnnpack_sdpa_validate(call);
  } catch (const XnnpackError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted";
  return XnnpackError("none", 0, "");
}

void expect_rejected(const SdpaOperatorCall& call, const std::string& op, const std::string& message) {
  const XnnpackError e = error_of(call);
  EXPECT_EQ(e.op, op);
  EXPECT_EQ(e.status, 2);
  EXPECT_EQ(e.status_name, "xnn_status_invalid_parameter");
  EXPECT_EQ(e.what(), op + " returned xnn_status_invalid_parameter: " + message);
}

const std::string kDefine = "xnn_define_scaled_dot_product_attention";
const std::string kFailed = "failed to define Scaled Dot Product Attention operator with ";

TEST(XnnpackSdpaModel, ShapesOfSemanticsItem18AreAccepted) {
  EXPECT_EQ(xnnpack_sdpa_validate(base_call()), (std::vector<int64_t>{1, 2, 3, 6}));
  SdpaOperatorCall mqa = base_call();  // multi-query: key/value one rank less, a single kv head
  mqa.key = filled({1, 5, 4}, wave);
  mqa.value = filled({1, 5, 6}, wave);
  EXPECT_EQ(xnnpack_sdpa_validate(mqa), (std::vector<int64_t>{1, 2, 3, 6}));
  SdpaOperatorCall rank3 = base_call();  // no batch dims: query [H, T, C]
  rank3.query = filled({2, 3, 4}, wave);
  rank3.key = filled({5, 4}, wave);
  rank3.value = filled({5, 6}, wave);
  EXPECT_EQ(xnnpack_sdpa_validate(rank3), (std::vector<int64_t>{2, 3, 6}));
}

TEST(XnnpackSdpaModel, GroupedQueryAttentionIsRejected) {
  SdpaOperatorCall gqa = base_call();  // H = 2, one kv head kept as a dim: not expressible
  gqa.key = filled({1, 1, 5, 4}, wave);
  gqa.value = filled({1, 1, 5, 6}, wave);
  expect_rejected(gqa, kDefine, kFailed + "key ID #1: key heads (1) must be equal to query heads (2)");
  SdpaOperatorCall gqa4 = base_call();
  gqa4.query = filled({1, 4, 3, 4}, wave);
  gqa4.key = filled({1, 2, 5, 4}, wave);
  expect_rejected(gqa4, kDefine, kFailed + "key ID #1: key heads (2) must be equal to query heads (4)");
  SdpaOperatorCall v_heads = base_call();
  v_heads.value = filled({1, 1, 5, 6}, wave);
  expect_rejected(v_heads, kDefine, kFailed + "value ID #2: value heads (1) must be equal to query heads (2)");
}

TEST(XnnpackSdpaModel, MaskMustBeTwoDimensionalTByU) {
  SdpaOperatorCall c = base_call();
  c.mask = filled({1, 3, 5}, wave);
  expect_rejected(c, kDefine, kFailed + "mask ID #4: mask must have only 2 dimension, found 3");
  c.mask = filled({2, 5}, wave);
  expect_rejected(c, kDefine, kFailed + "mask ID #4: mask query tokens (2) must match query (3)");
  c.mask = filled({3, 4}, wave);
  expect_rejected(c, kDefine, kFailed + "mask ID #4: mask key/value tokens (4) must match key/value (5)");
}

TEST(XnnpackSdpaModel, ScaleMustBeOneChannelVector) {
  SdpaOperatorCall c = base_call();
  c.scale = filled({1}, wave);
  expect_rejected(c, kDefine, kFailed + "scale ID #3: scale channels (1) must be equal to query channels (4)");
  c.scale = filled({1, 4}, wave);
  expect_rejected(c, kDefine, kFailed + "scale ID #3: scale must have only 1 dimension, found 2");
}

TEST(XnnpackSdpaModel, RanksBatchesChannelsAndTokensAreChecked) {
  SdpaOperatorCall c = base_call();
  c.query = filled({3, 4}, wave);
  expect_rejected(c, kDefine, kFailed + "query ID #0: query must have at least 3 dimensions");
  c = base_call();
  c.key = filled({4}, wave);
  expect_rejected(c, kDefine, kFailed + "key ID #1: key must have at least 2 dimensions");
  c = base_call();
  c.key = filled({1, 1, 2, 5, 4}, wave);
  expect_rejected(c, kDefine, kFailed + "key ID #1: key (5) must have either the same dimensions as or 1 less than query (4)");
  c = base_call();
  c.key = filled({2, 2, 5, 4}, wave);
  expect_rejected(c, kDefine,
                  "failed to define Scaled Dot Product Attention operator with value IDs #0 and #1: mismatch batch "
                  "size at dimension 0 across first (1) and second (2) values");
  c = base_call();
  c.key = filled({1, 2, 5, 3}, wave);
  expect_rejected(c, kDefine, kFailed + "key ID #1: key channels (3) must be equal to query channels (4)");
  c = base_call();
  c.value = filled({1, 5, 6}, wave);
  expect_rejected(c, kDefine, kFailed + "value ID #2: value (3) must have the same dimensions as key (4)");
  c = base_call();
  c.value = filled({1, 2, 4, 6}, wave);
  expect_rejected(c, kDefine,
                  kFailed + "key ID #1 and value ID #2: key tokens (5) must be equal to value tokens (4)");
}

TEST(XnnpackSdpaModel, ZeroSizesFailAtReshape) {
  const std::string reshape = "xnn_reshape_scaled_dot_product_attention_nhtc_f32";
  const std::string prefix = "failed to create Scaled Dot-Product Attention (NHTC, F32) operator with ";
  SdpaOperatorCall c = base_call();
  c.query = filled({0, 2, 3, 4}, wave);
  c.key = filled({0, 2, 5, 4}, wave);
  c.value = filled({0, 2, 5, 6}, wave);
  expect_rejected(c, reshape, prefix + "batch size of 0: batch size must be non-zero");
  c = base_call();
  c.query = filled({1, 2, 3, 0}, wave);
  c.key = filled({1, 2, 5, 0}, wave);
  c.scale = filled({0}, wave);
  expect_rejected(c, reshape, prefix + "0 channels: query/key channels must be non-zero");
  c = base_call();
  c.value = filled({1, 2, 5, 0}, wave);
  expect_rejected(c, reshape, prefix + "0 channels: value channels must be non-zero");
  c = base_call();  // U = 0: upstream's message prints the query tokens (3), not U
  c.key = filled({1, 2, 0, 4}, wave);
  c.value = filled({1, 2, 0, 6}, wave);
  c.mask = filled({3, 0}, wave);
  expect_rejected(c, reshape, prefix + "key/value tokens of 3: key/value tokens must be non-zero");
  c = base_call();
  c.precision = Precision::f16;
  c.query = filled({1, 2, 0, 4}, wave);
  c.mask = filled({0, 5}, wave);
  expect_rejected(c, "xnn_reshape_scaled_dot_product_attention_nhtc_f16",
                  "failed to create Scaled Dot-Product Attention (NHTC, F16) operator with query tokens of 0: query "
                  "tokens must be non-zero");
}

TEST(XnnpackSdpaModel, CapRangeIsCheckedAtDefineThenPerDatatype) {
  SdpaOperatorCall c = base_call();
  c.cap_type = LogitsCap::tanh;
  for (float bad : {0.0f, -1.0f, kInf, std::numeric_limits<float>::quiet_NaN()}) {
    c.cap = bad;
    EXPECT_EQ(error_of(c).op, kDefine) << bad;
  }
  c.cap = -1.0f;
  expect_rejected(c, kDefine,
                  "failed to define Scaled Dot Product Attention operator with logits cap tanh: cap (-1.000000) must "
                  "be finite and positive");
  c.cap = 1e-40f;  // subnormal: passes define, the f32 operator wants a normal cap
  expect_rejected(c, "xnn_create_scaled_dot_product_attention_nhtc_f32",
                  "failed to create Scaled Dot-Product Attention (NHTC, F32) operator with Cap TanH: cap value "
                  "(0.000000) must be finite and greater than 0");
  c.precision = Precision::f16;
  for (float bad : {1e-5f, 70000.0f}) {  // below 2^-14, above 65504
    c.cap = bad;
    EXPECT_EQ(error_of(c).op, "xnn_create_scaled_dot_product_attention_nhtc_f16") << bad;
  }
  c.cap = 70000.0f;
  c.precision = Precision::f32;
  EXPECT_NO_THROW(xnnpack_sdpa_validate(c));
  c.cap = 65504.0f;
  c.precision = Precision::f16;
  EXPECT_NO_THROW(xnnpack_sdpa_validate(c));
}

TEST(XnnpackSdpaModel, MisuseIsInvalidArgument) {
  SdpaOperatorCall c = base_call();
  c.value.data.pop_back();
  EXPECT_THROW(xnnpack_sdpa_model(c), std::invalid_argument);
}

// ---- Semantics (§4.2-§4.3, §5 item 19).

TEST(XnnpackSdpaModel, MultiQueryEqualsKeyValueRepeatedOverHeads) {
  SdpaOperatorCall mqa = base_call();
  mqa.key = filled({1, 5, 4}, [](int64_t i) { return wave(i + 100); });
  mqa.value = filled({1, 5, 6}, [](int64_t i) { return wave(i + 200); });
  SdpaOperatorCall mha = mqa;
  mha.key = filled({1, 2, 5, 4}, [](int64_t i) { return wave(i % 20 + 100); });
  mha.value = filled({1, 2, 5, 6}, [](int64_t i) { return wave(i % 30 + 200); });
  const FloatTensor a = xnnpack_sdpa_model(mqa), b = xnnpack_sdpa_model(mha);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.data, b.data);
  mha.key = filled({1, 2, 5, 4}, [](int64_t i) { return wave(i + 100); });  // head 1 different
  EXPECT_NE(xnnpack_sdpa_model(mha).data, a.data);
}

TEST(XnnpackSdpaModel, FullyMaskedRowIsNaNWhereAtenGivesZero) {
  for (Precision p : {Precision::f32, Precision::f16}) {
    SdpaOperatorCall c = base_call();
    c.precision = p;
    for (int64_t u = 0; u < 5; ++u) c.mask.data[1 * 5 + u] = -kInf;  // query token 1: every key masked
    c.mask.data[2 * 5 + 0] = -kInf;                                  // token 2: one key masked
    const FloatTensor out = xnnpack_sdpa_model(c);
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t t = 0; t < 3; ++t)
        for (int64_t d = 0; d < 6; ++d)
          EXPECT_EQ(std::isnan(out.data[(h * 3 + t) * 6 + d]), t == 1) << "h " << h << " t " << t << " d " << d;
  }
}

TEST(XnnpackSdpaModel, PartiallyMaskedKeyGetsNoWeight) {
  SdpaOperatorCall c = base_call();
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t u = 1; u < 5; ++u) c.mask.data[t * 5 + u] = -kInf;  // only key 0 kept
  const FloatTensor out = xnnpack_sdpa_model(c);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t d = 0; d < 6; ++d) EXPECT_EQ(out.data[(h * 3 + t) * 6 + d], c.value.data[(h * 5 + 0) * 6 + d]);
}

TEST(XnnpackSdpaModel, TanhCapIsAppliedBeforeTheMask) {
  // One query, two keys: logits (4, 0); cap 2 -> (2 tanh 2, 0) = (1.928, 0); mask (0, 1.5).
  // Cap then mask: softmax(1.928, 1.5); mask then cap: softmax(2 tanh 2, 2 tanh 0.75) = softmax(1.928, 1.270).
  SdpaOperatorCall c{filled({1, 1, 1}, [](int64_t) { return 4.0f; }),
                     filled({2, 1}, [](int64_t u) { return u == 0 ? 1.0f : 0.0f; }),
                     filled({2, 1}, [](int64_t u) { return u == 0 ? 1.0f : 0.0f; }),
                     filled({1}, [](int64_t) { return 1.0f; }), filled({1, 2}, [](int64_t u) { return u == 0 ? 0.0f : 1.5f; })};
  c.cap_type = LogitsCap::tanh;
  c.cap = 2.0f;
  const double l0 = 2 * std::tanh(2.0);
  const double cap_first = 1 / (1 + std::exp(1.5 - l0));
  const double mask_first = 1 / (1 + std::exp(2 * std::tanh(0.75) - l0));
  const float out = xnnpack_sdpa_model(c).data[0];
  EXPECT_NEAR(out, cap_first, 1e-6);
  EXPECT_GT(std::fabs(out - mask_first), 0.05);
  c.cap_type = LogitsCap::none;  // uncapped: softmax(4, 1.5)
  EXPECT_NEAR(xnnpack_sdpa_model(c).data[0], 1 / (1 + std::exp(1.5 - 4.0)), 1e-6);
}

TEST(XnnpackSdpaModel, ScaleMultipliesQueryPerChannel) {
  // scale [1, 0, 0, 0]: only channel 0 of q and k counts; the same as zeroing channels 1..3 of q.
  SdpaOperatorCall c = base_call();
  c.scale = filled({4}, [](int64_t i) { return i == 0 ? 1.0f : 0.0f; });
  SdpaOperatorCall zeroed = c;
  zeroed.scale = filled({4}, [](int64_t) { return 1.0f; });
  for (size_t i = 0; i < zeroed.query.data.size(); ++i)
    if (i % 4 != 0) zeroed.query.data[i] = 0.0f;
  EXPECT_EQ(xnnpack_sdpa_model(c).data, xnnpack_sdpa_model(zeroed).data);
  c.scale.data[3] = 1.0f;  // channel 3 back: the result moves
  EXPECT_NE(xnnpack_sdpa_model(c).data, xnnpack_sdpa_model(zeroed).data);
}

TEST(XnnpackSdpaModel, F16AccumulatesPVInHalfPrecision) {
  // Equal logits over 3 keys: P = fp16(1 / 3) = 0.333251953125 each; V = (1024, 1, 1).
  // fp16 accumulator: 341.25 -> 341.5 -> 341.75; an f32 accumulator would give fp16(341.9165) = 342.
  SdpaOperatorCall c{filled({1, 1, 1}, [](int64_t) { return 0.0f; }), filled({3, 1}, [](int64_t) { return 1.0f; }),
                     filled({3, 1}, [](int64_t u) { return u == 0 ? 1024.0f : 1.0f; }),
                     filled({1}, [](int64_t) { return 1.0f; }), filled({1, 3}, [](int64_t) { return 0.0f; })};
  c.precision = Precision::f16;
  EXPECT_EQ(xnnpack_sdpa_model(c).data[0], 341.75f);
  c.precision = Precision::f32;
  EXPECT_NEAR(xnnpack_sdpa_model(c).data[0], 1026.0 / 3, 1e-4);
  // The GEMM alone: 1 + 2^-11 + 2^-11 sums to 1 in fp16 steps (ties to even), 1 + 2^-10 in f32.
  EXPECT_EQ(xnnpack_gemm_model({1.0f, 0x1p-11f, 0x1p-11f}, {1, 1, 1}, 1, 1, 3, Precision::f16)[0], 1.0f);
  EXPECT_EQ(xnnpack_gemm_model({1.0f, 0x1p-11f, 0x1p-11f}, {1, 1, 1}, 1, 1, 3, Precision::f32)[0], 1.0f + 0x1p-10f);
}

// ---- Agreement with the double reference on generated cases, and a wrong variant that it catches.

float from_grid(int v, Precision p) {  // f32: 20-bit values in [-4, 4]; f16: 8-bit values (exact in fp16)
  return p == Precision::f32 ? std::ldexp(float(v), -18) : std::ldexp(float(v >> 12), -6);
}

FloatTensor gen_tensor(std::vector<int64_t> shape, Precision p) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const auto ints = *rc::gen::container<std::vector<int>>(static_cast<size_t>(n), rc::gen::inRange(-(1 << 20), 1 << 20));
  FloatTensor t{std::move(shape), std::vector<float>(static_cast<size_t>(n))};
  for (int64_t i = 0; i < n; ++i) t.data[i] = from_grid(ints[i], p);
  return t;
}

RC_GTEST_PROP(XnnpackSdpaModel, AgreesWithDoubleReferenceWithinItsNumerics, ()) {
  const Precision p = *rc::gen::element(Precision::f32, Precision::f16);
  std::vector<int64_t> lead = *rc::gen::container<std::vector<int64_t>>(
      static_cast<size_t>(*rc::gen::inRange(0, 3)), rc::gen::inRange<int64_t>(1, 3));
  const int64_t H = *rc::gen::inRange<int64_t>(1, 4), T = *rc::gen::inRange<int64_t>(1, 10);
  const int64_t U = *rc::gen::inRange<int64_t>(1, 13), C = *rc::gen::inRange<int64_t>(1, 21);
  const int64_t D = *rc::gen::inRange<int64_t>(1, 7);
  const bool mqa = *rc::gen::arbitrary<bool>();
  const auto shape = [&](std::vector<int64_t> tail, bool per_head) {
    std::vector<int64_t> s = lead;
    if (per_head) s.push_back(H);
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  SdpaOperatorCall call;
  call.precision = p;
  call.query = gen_tensor(shape({T, C}, true), p);
  call.key = gen_tensor(shape({U, C}, !mqa), p);
  call.value = gen_tensor(shape({U, D}, !mqa), p);
  call.scale = gen_tensor({C}, p);
  for (float& s : call.scale.data) s *= 0.25f;
  // Mask: 0, a finite value, or -inf; sometimes one query token fully masked.
  const auto kinds = *rc::gen::container<std::vector<int>>(static_cast<size_t>(T * U), rc::gen::inRange(0, 10));
  call.mask = gen_tensor({T, U}, p);
  for (int64_t i = 0; i < T * U; ++i)
    call.mask.data[i] = kinds[i] < 2 ? -kInf : kinds[i] < 6 ? 0.0f : call.mask.data[i];
  if (*rc::gen::inRange(0, 4) == 0) {
    const int64_t t = *rc::gen::inRange<int64_t>(0, T);
    for (int64_t u = 0; u < U; ++u) call.mask.data[t * U + u] = -kInf;
  }
  if (*rc::gen::arbitrary<bool>()) {
    call.cap_type = LogitsCap::tanh;
    call.cap = float(*rc::gen::inRange(2, 200)) / 4;
  }
  RC_CLASSIFY(p == Precision::f16, "f16");
  RC_CLASSIFY(mqa, "multi-query");
  RC_CLASSIFY(call.cap_type == LogitsCap::tanh, "tanh cap");

  const FloatTensor got = xnnpack_sdpa_model(call);
  const Reference ref = reference_sdpa(call);
  RC_ASSERT(got.data.size() == ref.out.size());
  for (size_t i = 0; i < ref.out.size(); ++i) {
    RC_ASSERT(std::isnan(got.data[i]) == std::isnan(ref.out[i]));
    if (!std::isnan(ref.out[i])) RC_ASSERT(std::fabs(got.data[i] - ref.out[i]) <= ref.bound[i]);
  }
}

SdpaOperatorCall scaled_case() {
  SdpaOperatorCall c{filled({2, 5, 8}, wave), filled({2, 7, 8}, [](int64_t i) { return wave(3 * i + 1); }),
                     filled({2, 7, 3}, [](int64_t i) { return wave(5 * i + 2); }),
                     filled({8}, [](int64_t) { return 0.35355338f; }),  // fp32(8^-1/2)
                     filled({5, 7}, [](int64_t i) { return i % 3 == 0 ? -1.0f : 0.0f; })};
  for (float& q : c.query.data) q *= 4;
  return c;
}

TEST(XnnpackSdpaModel, ReferenceComparisonAcceptsTheModelOnAFixedCase) {
  const SdpaOperatorCall c = scaled_case();
  EXPECT_TRUE(violations(xnnpack_sdpa_model(c), reference_sdpa(c)).empty());
}

TEST(XnnpackSdpaModel, ReferenceComparisonAllowsAnF16ProbabilityThatUnderflows) {
  // One query, two keys, logits (0, -18): p1 = e^-18 / (1 + e^-18) = 1.5e-8 is below half the
  // smallest fp16 subnormal (2^-25 = 3.0e-8), so the model rounds it to 0 and O = p0 V0 = 0 against
  // the meaning's -6.1e-8 (V1 = -4). An error bound relative to p alone calls that a 100% error.
  SdpaOperatorCall c{filled({1, 1, 1}, [](int64_t) { return 1.0f; }), filled({2, 1}, [](int64_t) { return 0.0f; }),
                     filled({2, 1}, [](int64_t u) { return u == 0 ? 0.0f : -4.0f; }),
                     filled({1}, [](int64_t) { return 1.0f; }), filled({1, 2}, [](int64_t u) { return u == 0 ? 0.0f : -18.0f; })};
  c.precision = Precision::f16;
  const Reference ref = reference_sdpa(c);
  EXPECT_EQ(xnnpack_sdpa_model(c).data[0], 0.0f);
  EXPECT_LT(ref.out[0], -6e-8);
  EXPECT_TRUE(violations(xnnpack_sdpa_model(c), ref).empty());
  // The allowance is the underflow's and the exp cutoff's (p1 is below it too) and no more: 2 eta
  // per |V| and one per GEMM step, 10 eta = 3.0e-7, and 1.25 p1 |V1| = 7.6e-8 for the zeroed weight.
  EXPECT_LT(ref.bound[0], 3.8e-7);
  EXPECT_FALSE(violations(filled({1, 1, 1}, [](int64_t) { return -4.5e-7f; }), ref).empty());
}

// The f16 exp cutoff zeroes a weight of up to 2^-14: logits (0, -9.72), just below the cutoff
// (-9.703125), V = (0, -4): the model gives 0 against the meaning's 4 e^-9.72 / (1 + e^-9.72) =
// 2.4e-4, an error the rounding terms alone (about 1e-4 here) do not cover. The allowance is the
// zeroed weight's, 1.25 p1 |V1|; a logit gap above the cutoff by more than the logits' error (-9.6)
// gets none, and f32 (no cutoff this close) none either.
TEST(XnnpackSdpaModel, ReferenceComparisonAllowsTheF16ExpCutoff) {
  auto call = [](float gap, Precision p) {
    SdpaOperatorCall c{filled({1, 1, 1}, [](int64_t) { return 1.0f; }), filled({2, 1}, [](int64_t) { return 0.0f; }),
                       filled({2, 1}, [](int64_t u) { return u == 0 ? 0.0f : -4.0f; }),
                       filled({1}, [](int64_t) { return 1.0f; }),
                       filled({1, 2}, [gap](int64_t u) { return u == 0 ? 0.0f : gap; })};
    c.precision = p;
    return c;
  };
  const SdpaOperatorCall below = call(-9.72f, Precision::f16);
  const Reference ref = reference_sdpa(below);
  const double p1 = std::exp(double(round_to_half(-9.72f))) / (1 + std::exp(double(round_to_half(-9.72f))));
  EXPECT_EQ(xnnpack_sdpa_model(below).data[0], 0.0f);
  EXPECT_NEAR(ref.out[0], -4 * p1, 1e-12);
  EXPECT_TRUE(violations(xnnpack_sdpa_model(below), ref).empty());
  EXPECT_LT(ref.bound[0], 1.25 * 4 * p1 * 1.05);
  EXPECT_FALSE(violations(filled({1, 1, 1}, [&](int64_t) { return float(-4 * p1 + 1.3 * 4 * p1); }), ref).empty());
  for (const SdpaOperatorCall& kept : {call(-9.6f, Precision::f16), call(-9.72f, Precision::f32)}) {
    const Reference r = reference_sdpa(kept);
    EXPECT_LT(r.bound[0], 0.25 * std::fabs(r.out[0])) << "no allowance for a weight that is kept";
    EXPECT_TRUE(violations(xnnpack_sdpa_model(kept), r).empty());
  }
}

// The f16 exp kernels zero exp(x) below -9.703125, where it stops being a
// normal fp16; the f32 ones only below -87.3. Logits (0, -12), V = (0,
// 1000): in f16 p1 = 0 and O = 0; in f32 O = 1000 e^-12 / (1 + e^-12).
// A gap of -9.6 keeps p1 in f16 too.
TEST(XnnpackSdpaModel, F16ExpIsZeroBelowTheSmallestNormalHalfOnly) {
  auto call = [](float gap, Precision p) {
    SdpaOperatorCall c{filled({1, 1, 1}, [](int64_t) { return 1.0f; }), filled({2, 1}, [](int64_t) { return 0.0f; }),
                       filled({2, 1}, [](int64_t u) { return u == 0 ? 0.0f : 1000.0f; }),
                       filled({1}, [](int64_t) { return 1.0f; }),
                       filled({1, 2}, [gap](int64_t u) { return u == 0 ? 0.0f : gap; })};
    c.precision = p;
    return xnnpack_sdpa_model(c).data[0];
  };
  EXPECT_EQ(call(-12.0f, Precision::f16), 0.0f);
  EXPECT_NEAR(call(-12.0f, Precision::f32), 1000 * std::exp(-12.0) / (1 + std::exp(-12.0)), 1e-6);
  EXPECT_NEAR(call(-9.6f, Precision::f16), 1000 * std::exp(-9.6), 1e-3);
}

TEST(XnnpackSdpaModel, ReferenceComparisonCatchesAModelThatForgetsTheScale) {
  // The wrong variant: the operator run without its scale (as if Q_s = Q), against the meaning with it.
  const SdpaOperatorCall c = scaled_case();
  SdpaOperatorCall unscaled = c;
  for (float& s : unscaled.scale.data) s = 1.0f;
  const std::vector<size_t> bad = violations(xnnpack_sdpa_model(unscaled), reference_sdpa(c));
  EXPECT_GT(bad.size(), 15u) << "more than half of the 2 x 5 x 3 outputs should be off";
}

}  // namespace
}  // namespace sdpa::xnnpack
