// matmul, softmax, dropout and the naive scaled_dot_product_attention of
// the reference kernel sets (current PyTorch semantics, NUMERICS.md).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "harness/ir/kernels/reference_common.h"
#include "harness/case/tensor_data.h"

namespace sdpa::ref {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// One row of x @ y: acc[j] = sum_t x[t] * y[t, j] in the accumulator type,
// each element summed over t in index order as Num::sum does. A few columns
// are summed in registers (in_lane_groups); more with y's rows read
// contiguously (keys outer, columns inner), where the loop over columns
// vectorizes (for a short row, each step would wait for the previous
// step's store and reload).
template <typename Acc, typename Mul>
void matmul_row(const double* x, const double* y, int64_t kk, int64_t cols, std::vector<Acc>& acc, Mul mul) {
  if (cols < kSideBySideOutputs) {
    in_lane_groups(cols, [&](int64_t j, auto lanes) {
      constexpr int N = decltype(lanes)::value;
      Acc total[N] = {};
      for (int64_t t = 0; t < kk; ++t)
        for (int l = 0; l < N; ++l) total[l] += static_cast<Acc>(mul(x[t], y[t * cols + j + l]));
      for (int l = 0; l < N; ++l) acc[j + l] = total[l];
    });
    return;
  }
  std::fill(acc.begin(), acc.end(), Acc(0));
  for (int64_t t = 0; t < kk; ++t) {
    const double xt = x[t];
    const double* yt = y + t * cols;
    for (int64_t j = 0; j < cols; ++j) acc[j] += static_cast<Acc>(mul(xt, yt[j]));
  }
}

// Non-exact numerics: out[j] = sum_t x[t] y[t, j] for every j < cols, as
// Num::sum and Num::mul give each one for dtype t (t's accumulation type,
// terms in index order; not stored to t), a row at a time as matmul_row
// sums one.
class RoundedRow {
 public:
  void sums(DType t, const double* x, const double* y, int64_t kk, int64_t cols, double* out) {
    if (accumulation_type(t) == DType::f64) {
      f64_.resize(static_cast<size_t>(cols));
      matmul_row(x, y, kk, cols, f64_, [](double a, double b) { return a * b; });
      std::copy(f64_.begin(), f64_.end(), out);
      return;
    }
    f32_.resize(static_cast<size_t>(cols));
    matmul_row(x, y, kk, cols, f32_,
               [](double a, double b) { return static_cast<float>(a) * static_cast<float>(b); });
    for (int64_t j = 0; j < cols; ++j) out[j] = f32_[j];
  }

 private:
  std::vector<float> f32_;
  std::vector<double> f64_;
};

// The m x cols block x @ y of one batch index, as Num::sum and Num::mul compute each element.
void matmul_block(Num n, DType acc_of, DType out, const double* x, const double* y, int64_t m, int64_t kk,
                  int64_t cols, double* r) {
  if (n.exact()) {  // compensated sums, each over its terms in index order
    CompensatedRow acc;
    for (int64_t i = 0; i < m; ++i) compensated_products(x + i * kk, y, kk, cols, acc, r + i * cols);
    return;
  }
  RoundedRow rounded;
  for (int64_t i = 0; i < m; ++i) {
    double* row = r + i * cols;
    rounded.sums(acc_of, x + i * kk, y, kk, cols, row);
    n.store_all(out, row, cols);
  }
}

Tensor matmul(const KernelArgs& a, Num n, const Tensor& x, const Tensor& y, DType out) {
  if (x.dim() < 2 || y.dim() < 2) refuse(a, "matmul operands must have rank >= 2");
  int64_t m = x.size(-2), kk = x.size(-1), k2 = y.size(-2), cols = y.size(-1);
  if (kk != k2)
    refuse(a, "mat1 and mat2 shapes cannot be multiplied (" + shape_str(x.shape) + " and " +
                  shape_str(y.shape) + ")");
  Shape xb(x.shape.begin(), x.shape.end() - 2), yb(y.shape.begin(), y.shape.end() - 2);
  auto batch = broadcast_shapes(xb, yb);
  if (!batch) refuse(a, "matmul batch dims " + shape_str(xb) + " and " + shape_str(yb) + " do not broadcast");
  Shape shape = *batch;
  shape.insert(shape.end(), {m, cols});
  Tensor r(out, shape);
  auto xs = strides_of(xb), ys = strides_of(yb);
  int64_t b = 0;
  DType acc_of = x.dtype;
  for_each_index(*batch, [&](const std::vector<int64_t>& idx) {
    const double* xp = x.data.data() + broadcast_offset(xb, xs, idx) * m * kk;
    const double* yp = y.data.data() + broadcast_offset(yb, ys, idx) * kk * cols;
    matmul_block(n, acc_of, out, xp, yp, m, kk, cols, r.data.data() + b++ * m * cols);
  });
  return r;
}

// One contiguous row of softmax, p[j] = exp(x[j] - mx) / total with each
// exp taken once, into p; returns the total. `t`: the type exp and the sum
// run in; `out`: the type p is stored as. The numerics' choices are made
// once for the row, not per element (13% fewer instructions in an aten
// case's _safe_softmax): the same operations, in the same order, as
// Num::exp, Num::sum and Num::op give per element. Not inlined into
// sdpa(): there, the running sum was kept on the stack.
[[gnu::noinline]] double softmax_weights(Num n, DType t, DType out, const double* x, double mx, int64_t len, double* p) {
  double sum;
  if (n.exact()) {
    CompensatedSum total;
    for (int64_t j = 0; j < len; ++j) total.add(p[j] = exp_no_underflow(x[j] - mx));
    sum = total.value();
  } else if (accumulation_type(t) == DType::f64) {
    double total = 0;
    for (int64_t j = 0; j < len; ++j) total += p[j] = exp_no_underflow(x[j] - mx);
    sum = total;
  } else {
    float total = 0;
    for (int64_t j = 0; j < len; ++j) total += static_cast<float>(p[j] = Num::exp_f32(x[j] - mx));
    sum = total;
  }
  for (int64_t j = 0; j < len; ++j) p[j] /= sum;
  n.op_all(out, p, len);
  return sum;
}

// The largest of a row's n values (NaN passed over, as fmax) and whether
// every one is -inf.
bool row_max(const double* x, int64_t n, double& mx) {
  mx = kNegInf;
  bool all_masked = true;
  for (int64_t i = 0; i < n; ++i) {
    const double xi = x[i];
    if (mx < xi) mx = xi;
    all_masked = all_masked && xi == kNegInf;
  }
  return all_masked;
}

// Softmax over `dim`; `safe` gives 0 for rows whose inputs are all -inf
// (aten._safe_softmax), plain softmax gives NaN there.
Tensor softmax(const KernelArgs& a, Num n, const Tensor& x, int64_t dim, DType out, bool safe) {
  dim = wrap_dim(dim, x.dim(), a.node);
  int64_t len = x.shape[dim], inner = 1;
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.shape[d];
  int64_t outer = x.numel() / std::max<int64_t>(1, len * inner);
  Tensor r(out, x.shape);
  DType acc = x.dtype;
  std::vector<double> row(static_cast<size_t>(inner == 1 ? 0 : len));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t e = 0; e < inner; ++e) {
      // A row over the last dim is read and written where it lies; another
      // is gathered into `row`, computed there and scattered back.
      const double* xr = x.data.data() + o * len * inner + e;
      double* rr = r.data.data() + o * len * inner + e;
      if (inner != 1) {
        for (int64_t i = 0; i < len; ++i) row[i] = xr[i * inner];
        xr = row.data();
      }
      double* pr = inner == 1 ? rr : row.data();
      double mx;
      if (row_max(xr, len, mx) && safe) {
        std::fill(pr, pr + len, 0.0);
      } else {
        softmax_weights(n, acc, out, xr, mx, len, pr);
      }
      if (inner != 1)
        for (int64_t i = 0; i < len; ++i) rr[i * inner] = pr[i];
    }
  return r;
}

std::vector<Tensor> native_dropout(const KernelArgs& a, Num n) {
  const Tensor& x = a.tensor(0);
  double p = a.real(1);
  bool train = a.flag(2, true);
  Tensor out = x, keep(DType::b8, x.shape, 1.0);
  auto both = [&] {
    std::vector<Tensor> r;
    r.push_back(std::move(out));
    r.push_back(std::move(keep));
    return r;
  };
  if (!train || p == 0.0) return both();
  CounterStream stream(a.ctx.data_seed, "dropout");
  double factor = n.scalar(x.dtype, 1.0 / (1.0 - p));
  for (int64_t i = 0; i < x.numel(); ++i) {
    bool kept = dropout_keep(stream, static_cast<uint64_t>(i), p);
    keep.data[i] = kept ? 1.0 : 0.0;
    // A product, as aten's x * mask * scale: a dropped NaN or inf stays NaN.
    out.data[i] = kept ? n.op(x.dtype, x.data[i] * factor) : x.data[i] * 0.0;
  }
  return both();
}

// aten.scaled_dot_product_attention: naive, with PyTorch's split scale
// (sqrt(|scale|) on q and k). Emulated numerics follow the math backend:
// f16/bf16 inputs are upcast, every step rounds to f32, the output to the
// dtype. Naive numerics round every step to the input dtype.
struct SdpaShapes {
  int64_t batch, Hq, Hkv, Lq, Lkv, E, Ev;
};

SdpaShapes sdpa_shapes(const KernelArgs& a, const Tensor& q, const Tensor& k, const Tensor& v) {
  if (q.dim() < 3 || k.dim() != q.dim() || v.dim() != q.dim())
    refuse(a, "this kernel takes q, k, v of one rank >= 3");
  SdpaShapes s{1, q.size(-3), k.size(-3), q.size(-2), k.size(-2), q.size(-1), v.size(-1)};
  for (int64_t d = 0; d < q.dim() - 3; ++d) s.batch *= q.shape[d];
  if (k.size(-1) != s.E) refuse(a, "query and key head dims differ");
  if (v.size(-2) != s.Lkv || v.size(-3) != s.Hkv) refuse(a, "key and value shapes differ");
  return s;
}

int64_t kv_head(const KernelArgs& a, const SdpaShapes& s, int64_t h, bool gqa) {
  if (s.Hq == s.Hkv) return h;
  if (gqa && s.Hq % s.Hkv == 0) return h / (s.Hq / s.Hkv);
  if (s.Hkv == 1) return 0;
  refuse(a, "The size of tensor a (" + std::to_string(s.Hq) + ") must match the size of tensor b (" +
                std::to_string(s.Hkv) + ") at non-singleton dimension 1");
}

// The arguments of one attention call, read from whichever op holds them.
struct AttentionArgs {
  const Tensor* mask = nullptr;
  double dropout_p = 0.0;
  bool causal = false;
  bool bottom_right = false;  // causal keeps j <= i + Lkv - Lq instead of j <= i
  std::optional<double> scale;
  bool gqa = false;
};

// aten.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, *, scale, enable_gqa):
// attn_mask, dropout_p and is_causal by position or keyword.
AttentionArgs sdpa_args(const KernelArgs& call) {
  std::optional<KernelArgs> storage;
  const KernelArgs& a = call.bound(3, {"attn_mask", "dropout_p", "is_causal"}, storage);
  AttentionArgs r;
  r.mask = a.optional_tensor(3);
  r.dropout_p = a.real(4, 0.0);
  r.causal = a.flag(5, false);
  r.scale = a.kwarg_real("scale");
  r.gqa = a.kwarg_flag("enable_gqa", false);
  if (r.causal && r.mask)
    refuse(a, "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
  return r;
}

// aten._scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, return_debug_mask, *, scale):
// no mask; a direct call aligns causal bottom-right (FA2; with Lq == 1 that
// keeps every key, as FA2 turns causal off there); heads grouped like GQA.
AttentionArgs flash_args(const KernelArgs& call) {
  std::optional<KernelArgs> storage;
  const KernelArgs& a = call.bound(3, {"dropout_p", "is_causal", "return_debug_mask"}, storage);
  AttentionArgs r;
  r.dropout_p = a.real(3, 0.0);
  r.causal = a.flag(4, false);
  r.bottom_right = true;
  r.scale = a.kwarg_real("scale");
  r.gqa = true;
  return r;
}

// The efficient and cuDNN ops share (q, k, v, attn_bias, compute_log_sumexp, dropout_p, is_causal):
// an additive bias and causal may come together (both applied), causal aligned top-left. `a`
// bound (KernelArgs::bound): those by position or keyword.
AttentionArgs bias_call_args(const KernelArgs& a) {
  AttentionArgs r;
  r.mask = a.optional_tensor(3);
  r.dropout_p = a.real(5, 0.0);
  r.causal = a.flag(6, false);
  r.scale = a.kwarg_real("scale");
  return r;
}

// aten._scaled_dot_product_efficient_attention: causal is CustomMaskType::CausalFromTopLeft; no GQA.
AttentionArgs efficient_args(const KernelArgs& call) {
  std::optional<KernelArgs> storage;
  const KernelArgs& a = call.bound(3, {"attn_bias", "compute_log_sumexp", "dropout_p", "is_causal"}, storage);
  if (a.tensor(0).dim() >= 3 && a.tensor(0).size(-3) != a.tensor(1).size(-3))
    refuse(a, "_scaled_dot_product_efficient_attention: query and key head counts differ (no GQA)");
  return bias_call_args(a);
}

// aten._scaled_dot_product_cudnn_attention (its return_debug_mask follows is_causal): MHA.cpp's
// set_causal_mask(is_causal) is top-left; GQA grouped.
AttentionArgs cudnn_args(const KernelArgs& call) {
  std::optional<KernelArgs> storage;
  const KernelArgs& a =
      call.bound(3, {"attn_bias", "compute_log_sumexp", "dropout_p", "is_causal", "return_debug_mask"}, storage);
  AttentionArgs r = bias_call_args(a);
  r.gqa = true;
  return r;
}

// One output row, out[e] = sum_j p[j] v[j, e] over n keys: compensated
// sums in exact numerics (the same bits as Num::sum), Num::sum and Num::mul
// otherwise.
void weighted_values(Num n, DType t, DType out_dtype, const double* p, const double* v, int64_t keys, int64_t Ev,
                     CompensatedRow& acc, RoundedRow& rounded, double* out) {
  if (n.exact()) {
    compensated_products(p, v, keys, Ev, acc, out);
    return;
  }
  rounded.sums(t, p, v, keys, Ev, out);
  n.store_all(out_dtype, out, Ev);
}

std::vector<Tensor> sdpa(const KernelArgs& a, Num n, const AttentionArgs& call, Tensor* logsumexp = nullptr) {
  const Tensor &q = a.tensor(0), &k = a.tensor(1), &v = a.tensor(2);
  const Tensor* mask = call.mask;
  const double dropout_p = call.dropout_p;
  const bool causal = call.causal;
  const auto& given = call.scale;
  const bool gqa = call.gqa;
  SdpaShapes s = sdpa_shapes(a, q, k, v);
  DType t = n.mode == Numerics::naive ? q.dtype : accumulation_type(q.dtype);
  double scale = given ? *given : 1.0 / std::sqrt(static_cast<double>(s.E));
  double sf = n.scalar(t, std::sqrt(std::fabs(scale)));
  double qf = scale < 0 ? -sf : sf;

  Shape score_shape(q.shape.begin(), q.shape.end() - 1);
  score_shape.push_back(s.Lkv);
  Shape ms = mask ? mask->shape : Shape{};
  if (mask && (ms.size() > score_shape.size() || !broadcast_shapes(ms, score_shape).has_value()))
    refuse(a, "attn_mask " + shape_str(ms) + " does not broadcast to " + shape_str(score_shape));
  // The mask read at score index [batch..., h, i, j]: per-dim strides, 0 where it broadcasts.
  const std::vector<int64_t> mstrides = broadcast_strides(ms, score_shape.size());
  const size_t batch_dims = score_shape.size() - 3;
  auto mask_base = [&](int64_t b, int64_t h) {
    int64_t offset = h * mstrides[batch_dims];
    for (int64_t d = static_cast<int64_t>(batch_dims) - 1; d >= 0; --d) {
      offset += (b % score_shape[d]) * mstrides[d];
      b /= score_shape[d];
    }
    return offset;
  };
  CounterStream drop(a.ctx.data_seed, "dropout");
  double keep_factor = n.scalar(t, 1.0 / (1.0 - dropout_p));

  Shape out_shape(q.shape.begin(), q.shape.end() - 1);
  out_shape.push_back(s.Ev);
  Tensor out(a.out_dtype(), out_shape);
  std::vector<double> qs(s.E), score(s.Lkv), p(s.Lkv);
  // The block's keys transposed, [E, Lkv] (in rounded numerics times
  // sqrt(scale) in the op-math type), and the sums of a row of outputs, each
  // summed over its terms in index order.
  std::vector<double> keys_t(s.E * s.Lkv);
  const double* keys_of = nullptr;  // the key block keys_t holds
  CompensatedRow acc;
  RoundedRow rounded;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.Hq; ++h) {
      int64_t hk = kv_head(a, s, h, gqa);
      const double* mrow0 = mask ? mask->data.data() + mask_base(b, h) : nullptr;
      const double* kb = k.data.data() + (b * s.Hkv + hk) * s.Lkv * s.E;
      const double* vb = v.data.data() + (b * s.Hkv + hk) * s.Lkv * s.Ev;
      // k * sqrt(scale) in the op-math type, once per key block rather than
      // per query row or head: the query heads of a group (all of them in
      // MQA) are consecutive and share it.
      if (kb != keys_of) {
        keys_of = kb;
        for (int64_t j = 0; j < s.Lkv; ++j)
          for (int64_t e = 0; e < s.E; ++e)
            keys_t[e * s.Lkv + j] = n.exact() ? kb[j * s.E + e] : n.op(t, kb[j * s.E + e] * sf);
      }
      for (int64_t i = 0; i < s.Lq; ++i) {
        const double* qr = q.data.data() + ((b * s.Hq + h) * s.Lq + i) * s.E;
        // Every key's q . k into score.
        if (n.exact()) {
          compensated_products(qr, keys_t.data(), s.E, s.Lkv, acc, score.data());
          for (int64_t j = 0; j < s.Lkv; ++j) score[j] *= scale;
        } else {
          for (int64_t e = 0; e < s.E; ++e) qs[e] = qr[e] * qf;
          n.op_all(t, qs.data(), s.E);
          rounded.sums(t, qs.data(), keys_t.data(), s.E, s.Lkv, score.data());
          n.store_all(t, score.data(), s.Lkv);
        }
        for (int64_t j = 0; j < s.Lkv; ++j) {
          double x = score[j];
          // Dropped keys get an additive -inf (aten's convert_boolean_attn_mask):
          // a NaN or +inf score stays NaN.
          if (causal && j > i + (call.bottom_right ? s.Lkv - s.Lq : 0)) x += kNegInf;
          if (mask) {
            const double m = mrow0[i * mstrides[batch_dims + 1] + j * mstrides[batch_dims + 2]];
            if (mask->dtype == DType::b8) x = m != 0.0 ? x : x + kNegInf;
            else x = n.op(t, x + m);
          }
          score[j] = x;
        }
        // Apart from the loop above, so that the running max stays in a register
        // (row_max's loop, written out: calling it here cost cuda 0.8% more
        // instructions a case).
        bool all_masked = true;
        double mx = kNegInf;
        for (int64_t j = 0; j < s.Lkv; ++j) {
          all_masked = all_masked && score[j] == kNegInf;
          if (mx < score[j]) mx = score[j];  // fmax: a NaN is passed over
        }
        double* orow = out.data.data() + ((b * s.Hq + h) * s.Lq + i) * s.Ev;
        const int64_t row = (b * s.Hq + h) * s.Lq + i;
        if (all_masked) {  // _safe_softmax: weights 0, still multiplied into V (0 * inf = NaN)
          if (logsumexp) logsumexp->data[row] = kNegInf;
          std::fill(p.begin(), p.end(), 0.0);
          weighted_values(n, t, a.out_dtype(), p.data(), vb, s.Lkv, s.Ev, acc, rounded, orow);
          continue;
        }
        const double total = softmax_weights(n, t, t, score.data(), mx, s.Lkv, p.data());
        if (logsumexp) logsumexp->data[row] = n.store(logsumexp->dtype, mx + std::log(total));
        for (int64_t j = 0; dropout_p > 0 && j < s.Lkv; ++j) {
          uint64_t flat = static_cast<uint64_t>(((b * s.Hq + h) * s.Lq + i) * s.Lkv + j);
          p[j] = dropout_keep(drop, flat, dropout_p) ? n.op(t, p[j] * keep_factor) : p[j] * 0.0;
        }
        weighted_values(n, t, a.out_dtype(), p.data(), vb, s.Lkv, s.Ev, acc, rounded, orow);
      }
    }
  return one_output(std::move(out));
}

}  // namespace

void add_attention_kernels(KernelSet& k, Num n) {
  k.add("aten.matmul.default", [n](const KernelArgs& a) {
    return one_output(matmul(a, n, a.tensor(0), a.tensor(1), a.out_dtype()));
  });
  k.add("aten.bmm.default", [n](const KernelArgs& a) {
    if (a.tensor(0).dim() != 3 || a.tensor(1).dim() != 3) refuse(a, "bmm takes two 3-D tensors");
    if (a.tensor(0).shape[0] != a.tensor(1).shape[0]) refuse(a, "bmm batch sizes differ");
    return one_output(matmul(a, n, a.tensor(0), a.tensor(1), a.out_dtype()));
  });
  k.add("aten._softmax.default", [n](const KernelArgs& a) {
    return one_output(softmax(a, n, a.tensor(0), a.integer(1), a.out_dtype(), false));
  });
  k.add("aten.softmax.int", [n](const KernelArgs& a) {
    return one_output(softmax(a, n, a.tensor(0), a.integer(1), a.out_dtype(), false));
  });
  k.add("aten._safe_softmax.default", [n](const KernelArgs& a) {
    return one_output(softmax(a, n, a.tensor(0), a.integer(1), a.out_dtype(), true));
  });
  k.add("aten.native_dropout.default", [n](const KernelArgs& a) { return native_dropout(a, n); });
  k.add("aten.scaled_dot_product_attention.default",
        [n](const KernelArgs& a) { return sdpa(a, n, sdpa_args(a)); });
  // Returns (output, logsumexp [batch..., Hq, Lq] in f32); the op's other
  // outputs (sequence offsets, rng state) hold nothing attention computes.
  k.add("aten._scaled_dot_product_flash_attention.default", [n](const KernelArgs& a) {
    Tensor lse(a.out_dtype(1), a.out_shape(1));
    std::vector<Tensor> out = sdpa(a, n, flash_args(a), &lse);
    out.push_back(std::move(lse));
    return out;
  });
  // Both return (output, log_sumexp in f32); the row count is the declared shape's: an empty last
  // dim (compute_log_sumexp false) leaves it unwritten. Philox seed and offset are not modeled.
  auto with_lse = [n](AttentionArgs (*read)(const KernelArgs&)) {
    return [n, read](const KernelArgs& a) {
      Tensor lse(a.out_dtype(1), a.out_shape(1));
      const bool rows = lse.numel() > 0;
      std::vector<Tensor> out = sdpa(a, n, read(a), rows ? &lse : nullptr);
      out.push_back(std::move(lse));
      return out;
    };
  };
  k.add("aten._scaled_dot_product_efficient_attention.default", with_lse(efficient_args));
  k.add("aten._scaled_dot_product_cudnn_attention.default", with_lse(cudnn_args));
}

}  // namespace sdpa::ref
