#include "backends/xnnpack/xnn/xnnpack_sdpa_model.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "backends/xnnpack/xnn/half.h"

namespace sdpa::xnnpack {
namespace {

constexpr int kInvalidParameter = 2;  // xnn_status_invalid_parameter
constexpr const char* kNode = "Scaled Dot Product Attention";  // xnn_node_type_to_string
constexpr const char* kDefine = "xnn_define_scaled_dot_product_attention";
// Inputs below this give exp = +0 in the f32 raddstoreexpminusmax kernels.
constexpr float kExpCutoff = -0x1.5D589Ep6f;
// The f16 kernels (f16-raddstoreexpminusmax, e.g. avx2-rr1-p2) zero exp
// below the smallest x whose exp is a normal fp16: no subnormal p is stored
// or summed.
constexpr float kExpCutoffF16 = -0x1.368000p+3f;
// Query-token tile of one task (the GEMM's mr). The rows of a tile are
// independent, so the value changes the order of work, not a result.
constexpr int64_t kTokenBlock = 7;

[[noreturn]] __attribute__((format(printf, 2, 3))) void fail(const char* op, const char* format, ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  throw XnnpackError(op, kInvalidParameter, text);
}

size_t at(const std::vector<int64_t>& shape, size_t from_end) {
  return static_cast<size_t>(shape[shape.size() - from_end]);
}

// xnn_subgraph_check_batch_dims_match for the first `batch_dims` dims.
void check_batch_dims(uint32_t id1, const std::vector<int64_t>& s1, uint32_t id2, const std::vector<int64_t>& s2,
                      size_t batch_dims) {
  for (size_t i = 0; i < batch_dims; ++i)
    if (s1[i] != s2[i])
      fail(kDefine,
           "failed to define %s operator with value IDs #%u and #%u: mismatch batch size at dimension %zu across "
           "first (%zu) and second (%zu) values",
           kNode, id1, id2, i, static_cast<size_t>(s1[i]), static_cast<size_t>(s2[i]));
}

void check_data(const FloatTensor& t, const char* what) {
  int64_t n = 1;
  for (int64_t d : t.shape) {
    if (d < 0) throw std::invalid_argument(std::string("xnnpack sdpa model: negative dimension in ") + what);
    n *= d;
  }
  if (static_cast<int64_t>(t.data.size()) != n)
    throw std::invalid_argument(std::string("xnnpack sdpa model: ") + what + ": data size does not match its shape");
}

// The arithmetic of one datatype: every operation's f32 result rounded to it.
struct Arith {
  bool half;
  float operator()(float x) const { return half ? round_to_half(x) : x; }
};

}  // namespace

// Models xnn_define_scaled_dot_product_attention + create_/reshape_scaled_dot_product_attention_nhtc_* checks.
std::vector<int64_t> xnnpack_sdpa_validate(const SdpaOperatorCall& call) {
  check_data(call.query, "query");
  check_data(call.key, "key");
  check_data(call.value, "value");
  check_data(call.scale, "scale");
  check_data(call.mask, "mask");
  const auto& q = call.query.shape;
  const auto& k = call.key.shape;
  const auto& v = call.value.shape;
  const auto& scale = call.scale.shape;
  const auto& mask = call.mask.shape;

  // xnn_define_scaled_dot_product_attention (the datatype checks hold by construction: one Precision for all).
  if (call.cap_type == LogitsCap::tanh && (!std::isfinite(call.cap) || call.cap <= 0.0f))
    fail(kDefine, "failed to define %s operator with logits cap tanh: cap (%f) must be finite and positive", kNode,
         static_cast<double>(call.cap));
  if (q.size() < 3)
    fail(kDefine, "failed to define %s operator with query ID #%u: query must have at least 3 dimensions", kNode,
         kQueryId);
  const size_t heads = at(q, 3), query_tokens = at(q, 2), channels = at(q, 1);
  if (k.size() < 2)
    fail(kDefine, "failed to define %s operator with key ID #%u: key must have at least 2 dimensions", kNode, kKeyId);
  if (k.size() != q.size() && k.size() != q.size() - 1)
    fail(kDefine,
         "failed to define %s operator with key ID #%u: key (%zu) must have either the same dimensions as or 1 less "
         "than query (%zu)",
         kNode, kKeyId, k.size(), q.size());
  const size_t batch_dims = q.size() - 3;
  const bool multi_query = k.size() == q.size() - 1;
  check_batch_dims(kQueryId, q, kKeyId, k, batch_dims);
  if (!multi_query && at(k, 3) != heads)
    fail(kDefine, "failed to define %s operator with key ID #%u: key heads (%zu) must be equal to query heads (%zu)",
         kNode, kKeyId, at(k, 3), heads);
  if (at(k, 1) != channels)
    fail(kDefine,
         "failed to define %s operator with key ID #%u: key channels (%zu) must be equal to query channels (%zu)",
         kNode, kKeyId, at(k, 1), channels);
  if (v.size() < 2)
    fail(kDefine, "failed to define %s operator with value ID #%u: value must have at least 2 dimensions", kNode,
         kValueId);
  if (v.size() != k.size())
    fail(kDefine, "failed to define %s operator with value ID #%u: value (%zu) must have the same dimensions as key (%zu)",
         kNode, kValueId, v.size(), k.size());
  check_batch_dims(kQueryId, q, kValueId, v, batch_dims);
  if (!multi_query && at(v, 3) != heads)
    fail(kDefine,
         "failed to define %s operator with value ID #%u: value heads (%zu) must be equal to query heads (%zu)", kNode,
         kValueId, at(v, 3), heads);
  const size_t key_tokens = at(k, 2);
  if (key_tokens != at(v, 2))
    fail(kDefine,
         "failed to define %s operator with key ID #%u and value ID #%u: key tokens (%zu) must be equal to value "
         "tokens (%zu)",
         kNode, kKeyId, kValueId, key_tokens, at(v, 2));
  if (scale.size() != 1)
    fail(kDefine, "failed to define %s operator with scale ID #%u: scale must have only 1 dimension, found %zu", kNode,
         kScaleId, scale.size());
  if (static_cast<size_t>(scale[0]) != channels)
    fail(kDefine,
         "failed to define %s operator with scale ID #%u: scale channels (%zu) must be equal to query channels (%zu)",
         kNode, kScaleId, static_cast<size_t>(scale[0]), channels);
  if (mask.size() != 2)
    fail(kDefine, "failed to define %s operator with mask ID #%u: mask must have only 2 dimension, found %zu", kNode,
         kMaskId, mask.size());
  if (static_cast<size_t>(mask[0]) != query_tokens)
    fail(kDefine, "failed to define %s operator with mask ID #%u: mask query tokens (%zu) must match query (%zu)", kNode,
         kMaskId, static_cast<size_t>(mask[0]), query_tokens);
  if (static_cast<size_t>(mask[1]) != key_tokens)
    fail(kDefine,
         "failed to define %s operator with mask ID #%u: mask key/value tokens (%zu) must match key/value (%zu)", kNode,
         kMaskId, static_cast<size_t>(mask[1]), key_tokens);

  // xnn_create_scaled_dot_product_attention_nhtc_{f32,f16}: the cap's range.
  const bool f16 = call.precision == Precision::f16;
  const char* op_type = f16 ? "Scaled Dot-Product Attention (NHTC, F16)" : "Scaled Dot-Product Attention (NHTC, F32)";
  if (call.cap_type == LogitsCap::tanh) {
    const float cap = call.cap;
    if (f16 && (cap <= 0.0f || std::isnan(cap) || cap < 0x1.0p-14f || cap > 65504.0f))
      fail("xnn_create_scaled_dot_product_attention_nhtc_f16",
           "failed to create %s operator with Cap TanH: cap value (%f) must be greater than 0, representable in FP16, "
           "and not be NaN",
           op_type, static_cast<double>(cap));
    if (!f16 && (cap <= 0.0f || !std::isnormal(cap)))
      fail("xnn_create_scaled_dot_product_attention_nhtc_f32",
           "failed to create %s operator with Cap TanH: cap value (%f) must be finite and greater than 0", op_type,
           static_cast<double>(cap));
  }

  // xnn_reshape_scaled_dot_product_attention_nhtc_{f32,f16}.
  const char* reshape = f16 ? "xnn_reshape_scaled_dot_product_attention_nhtc_f16"
                            : "xnn_reshape_scaled_dot_product_attention_nhtc_f32";
  size_t batch = 1;
  for (size_t i = 0; i < batch_dims; ++i) batch *= static_cast<size_t>(q[i]);
  const size_t kv_heads = multi_query ? 1 : at(k, 3);
  const size_t value_channels = at(v, 1);
  if (batch == 0)
    fail(reshape, "failed to create %s operator with batch size of %zu: batch size must be non-zero", op_type, batch);
  if (heads == 0)
    fail(reshape,
         "failed to create %s operator with number of query heads %zu: number of query heads must be non-zero",
         op_type, heads);
  if (kv_heads == 0)
    fail(reshape,
         "failed to create %s operator with number of key/value heads %zu: number of key/value heads must be non-zero",
         op_type, kv_heads);
  if (kv_heads != 1 && kv_heads != heads)  // unreachable after define's head checks; kept as upstream has it
    fail(reshape,
         "failed to create %s operator with number of key/value heads %zu: number of key/value heads must be either "
         "1 or equal to number of query heads",
         op_type, kv_heads);
  if (query_tokens == 0)
    fail(reshape, "failed to create %s operator with query tokens of %zu: query tokens must be non-zero", op_type,
         query_tokens);
  if (key_tokens == 0)  // upstream prints query_tokens here
    fail(reshape, "failed to create %s operator with key/value tokens of %zu: key/value tokens must be non-zero",
         op_type, query_tokens);
  if (channels == 0)
    fail(reshape, "failed to create %s operator with %zu channels: query/key channels must be non-zero", op_type,
         channels);
  if (value_channels == 0)
    fail(reshape, "failed to create %s operator with %zu channels: value channels must be non-zero", op_type,
         value_channels);

  std::vector<int64_t> out(q.begin(), q.end());
  out.back() = static_cast<int64_t>(value_channels);
  return out;
}

// Models the x86 f32 GEMM micro-kernels (FMA per k step) and the AVX2 f16 GEMM (fp16 accumulator after each step).
std::vector<float> xnnpack_gemm_model(const std::vector<float>& a, const std::vector<float>& w, int64_t m, int64_t n,
                                      int64_t k, Precision precision) {
  if (static_cast<int64_t>(a.size()) != m * k || static_cast<int64_t>(w.size()) != n * k)
    throw std::invalid_argument("xnnpack_gemm_model: data size does not match [M, K] x [N, K]");
  const Arith rnd{precision == Precision::f16};
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < k; ++p) acc = rnd(std::fma(rnd(a[i * k + p]), rnd(w[j * k + p]), acc));
      c[i * n + j] = acc;
    }
  return c;
}

// Models xnn_compute_scaled_dot_product_attention (semantics §4.2-§4.3), one task per (batch, head, token block).
FloatTensor xnnpack_sdpa_model(const SdpaOperatorCall& call) {
  const std::vector<int64_t> out_shape = xnnpack_sdpa_validate(call);
  const bool f16 = call.precision == Precision::f16;
  const Arith rnd{f16};
  const auto rounded = [&](const FloatTensor& t) {
    std::vector<float> d(t.data.size());
    std::transform(t.data.begin(), t.data.end(), d.begin(), rnd);
    return d;
  };
  const std::vector<float> query = rounded(call.query), key = rounded(call.key), value = rounded(call.value),
                           scale = rounded(call.scale), mask = rounded(call.mask);

  const auto& qs = call.query.shape;
  const bool multi_query = call.key.shape.size() == qs.size() - 1;
  const int64_t H = qs[qs.size() - 3], T = qs[qs.size() - 2], C = qs.back();
  const int64_t U = call.key.shape[call.key.shape.size() - 2], D = call.value.shape.back();
  const int64_t kv_heads = multi_query ? 1 : H;
  int64_t batch = 1;
  for (size_t i = 0; i + 3 < qs.size(); ++i) batch *= qs[i];

  // The cap and its reciprocal as the reshape computes them: f32 1/cap; f16 both rounded to fp16.
  const float cap = rnd(call.cap);
  const float cap_reciprocal = rnd(1.0f / call.cap);

  FloatTensor out{out_shape, std::vector<float>(static_cast<size_t>(batch * H * T * D))};
  std::vector<float> scaled_query, logits, vt(static_cast<size_t>(D * U));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kv = b * kv_heads + (multi_query ? 0 : h);
      const std::vector<float> k_head(key.begin() + kv * U * C, key.begin() + (kv + 1) * U * C);  // [U, C]: GOI
      for (int64_t u = 0; u < U; ++u)  // V [U, D] packed GIO: the GEMM reads it as [D, U]
        for (int64_t d = 0; d < D; ++d) vt[d * U + u] = value[(kv * U + u) * D + d];
      for (int64_t t0 = 0; t0 < T; t0 += kTokenBlock) {
        const int64_t rows = std::min(kTokenBlock, T - t0);
        // 1. Q_s = Q * scale, row by row (vmul).
        scaled_query.assign(static_cast<size_t>(rows * C), 0.0f);
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t c = 0; c < C; ++c)
            scaled_query[i * C + c] = rnd(query[((b * H + h) * T + t0 + i) * C + c] * scale[c]);
        // 2. S = Q_s K^T (GEMM, clamp [-inf, inf]).
        logits = xnnpack_gemm_model(scaled_query, k_head, rows, U, C, call.precision);
        // 3. Optional tanh cap (vmulc, vtanh, vmulc), before the mask.
        if (call.cap_type == LogitsCap::tanh)
          for (float& s : logits) s = rnd(rnd(std::tanh(rnd(s * cap_reciprocal))) * cap);
        // 4. S = S + mask[t, :] (vadd).
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t u = 0; u < U; ++u) logits[i * U + u] = rnd(logits[i * U + u] + mask[(t0 + i) * U + u]);
        // 5. Softmax per row: rmax, raddstoreexpminusmax, reciprocal, vmulc.
        const float cutoff = call.precision == Precision::f16 ? kExpCutoffF16 : kExpCutoff;
        for (int64_t i = 0; i < rows; ++i) {
          float* row = logits.data() + i * U;
          float row_max = row[0];
          for (int64_t u = 1; u < U; ++u) row_max = std::max(row_max, row[u]);
          float sum = 0.0f;
          for (int64_t u = 0; u < U; ++u) {
            const float x = row[u] - row_max;  // NaN when row_max is -inf
            const float e = x < cutoff ? 0.0f : std::exp(x);
            sum += e;  // f32 accumulation of the unrounded values
            row[u] = rnd(e);
          }
          const float reciprocal = rnd(1.0f / rnd(sum));
          for (int64_t u = 0; u < U; ++u) row[u] = rnd(row[u] * reciprocal);
        }
        // 6. O = P V (GEMM).
        const std::vector<float> o = xnnpack_gemm_model(logits, vt, rows, D, U, call.precision);
        std::copy(o.begin(), o.end(), out.data.begin() + ((b * H + h) * T + t0) * D);
      }
    }
  return out;
}

}  // namespace sdpa::xnnpack
