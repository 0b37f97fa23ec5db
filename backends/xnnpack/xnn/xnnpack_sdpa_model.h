#pragma once
/// A model of XNNPACK's scaled dot-product attention operator, removed from
/// XNNPACK by 764f7826eb (2025-04-17) and so absent from every library one can
/// link: xnn_define_scaled_dot_product_attention's and the NHTC operator's
/// validation, and xnn_compute_scaled_dot_product_attention's arithmetic, as
/// semantics/cortex-m-and-xnnpack.md §4 describes them (messages as the
/// upstream sources at the parent of that commit log them).
#include <cstdint>
#include <vector>

#include "backends/xnnpack/xnn/xnnpack_ops.h"

namespace sdpa::xnnpack {

/// enum xnn_attention_logits_cap_type.
enum class LogitsCap { none, tanh };

/// One call: the subgraph node's five inputs, its cap and its datatype.
struct SdpaOperatorCall {
  FloatTensor query;  ///< [*, H, T, C]; the leading dims are the batch
  FloatTensor key;    ///< [*, H, U, C] (multi-head) or [*, U, C] (multi-query: one key/value head)
  FloatTensor value;  ///< same rank as key: [*, H, U, D] or [*, U, D]
  FloatTensor scale;  ///< [C], multiplied into the query per channel
  FloatTensor mask;   ///< [T, U], additive, broadcast over batch and heads; required
  LogitsCap cap_type = LogitsCap::none;
  float cap = 0.0f;   ///< with LogitsCap::tanh: logits -> cap * tanh(logits * (1 / cap)), before the mask
  Precision precision = Precision::f32;  ///< the datatype of every input and the output (fp32 or fp16)
};

/// The value IDs the modelled messages name: the order of the define call's arguments.
inline constexpr uint32_t kQueryId = 0, kKeyId = 1, kValueId = 2, kScaleId = 3, kMaskId = 4;

/// The checks of xnn_define_scaled_dot_product_attention, then of
/// xnn_create_scaled_dot_product_attention_nhtc_{f32,f16} (cap range), then of
/// xnn_reshape_scaled_dot_product_attention_nhtc_* (zero sizes, key/value
/// heads in {1, H}), in that order. Returns the output shape [*, H, T, D].
/// The first failing check throws XnnpackError{op = that function,
/// status = xnn_status_invalid_parameter} whose what() is the upstream log
/// text. A data size that does not match its shape throws std::invalid_argument.
std::vector<int64_t> xnnpack_sdpa_validate(const SdpaOperatorCall& call);

/// The operator's output after xnnpack_sdpa_validate. Inputs are first rounded
/// to the call's datatype (the operator's tensors have it). Per (batch, head,
/// block of query tokens), as xnn_compute_scaled_dot_product_attention does:
///   1. Q_s = Q * scale (vmul),
///   2. S = Q_s K^T (GEMM, xnnpack_gemm_model),
///   3. with a tanh cap: S = (tanh(S * (1/cap))) * cap, three rounded steps,
///   4. S = S + mask,
///   5. per row m = max S, e = exp(S - m) (0 below -0x1.5D589Ep6), sum = sum e,
///      r = 1 / sum, P = e * r — f32: e and sum in f32; f16: e stored rounded
///      to fp16, sum accumulated in f32 from the unrounded e and rounded once,
///      r = fp16(1.0f / float(sum)),
///   6. O = P V (GEMM).
/// Every f16 step rounds its f32 result to fp16. A row whose logits are all
/// -inf gives m = -inf, S - m = NaN, and a NaN output row (ATen gives 0).
/// exp and tanh are the C library's: the real micro-kernels' polynomials
/// differ from them by a few ulp, so the model is not bit-exact there.
FloatTensor xnnpack_sdpa_model(const SdpaOperatorCall& call);

/// The model's GEMM micro-kernel arithmetic, c[M, N] = a[M, K] w[N, K]^T, as the
/// x86 kernels compute it: the k steps in order from an accumulator of 0
/// (no bias), each one f32 fused multiply-add; for f16 (operands rounded to
/// fp16 on entry) the accumulator is rounded to fp16 after every step (AVX2
/// f16 GEMM). Exposed so tests can hold it against the real fully-connected operator.
std::vector<float> xnnpack_gemm_model(const std::vector<float>& a, const std::vector<float>& w, int64_t m, int64_t n,
                                      int64_t k, Precision precision);

}  // namespace sdpa::xnnpack
