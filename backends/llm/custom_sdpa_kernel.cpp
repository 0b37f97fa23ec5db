// Models llama::custom_sdpa (ExecuTorch op_sdpa.cpp, custom_sdpa_out_impl and
// cpu_flash_attention): validation order and texts, key truncation to
// start_pos + Lq without a mask, the kv loop to min(m + start_pos +
// qBlockSize, kvSize) and the per-block causal fill (j <= start_pos + i,
// across kv blocks), a 2-D fp32
// additive mask shared by batch and heads (an empty one adds nothing but
// still turns truncation off), GQA head h / (Hq / Hkv), the
// scale applied after q.k with the causal -inf written first, dropout
// ignored, a blockwise online softmax (512 keys; 32/64/256 query rows) that
// skips fully masked blocks (still adding 0 * V) but has no zero-sum guard,
// row sums a task carries from one query block to the next (parallel_for's
// contiguous chunks; qk_sum_data is never reset),
// the unmasked row max that drops a NaN (std::max over the vector lanes),
// Lq = 0 dividing by qSplitSize = 0, and f16/bf16 with f32 accumulation and
// P rounded to the activation dtype before P @ V.
#include "backends/llm/custom_sdpa_kernel.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/ir/exp_no_underflow.h"

namespace sdpa::llm {
namespace {

using Kind = KernelError::Kind;

[[noreturn]] void recoverable(const std::string& text) {
  throw KernelError(Kind::recoverable, text);
}
[[noreturn]] void fatal(const std::string& text) { throw KernelError(Kind::fatal, text); }

// validate_flash_attention_args: each failed sub-check logs its own text,
// then the caller logs "Invalid arguments".
// An earlier tree (`rev`) takes Float q only, or a mask of q's dtype.
void validate_args(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const EtRevision& rev) {
  auto invalid = [](const std::string& text) { recoverable(text + "; Invalid arguments"); };
  if (q.dim() != 4) invalid("query must be a 4D tensor");
  if (k.dim() != 4) invalid("key must be a 4D tensor");
  if (v.dim() != 4) invalid("value must be a 4D tensor");
  if (q.size(3) != v.size(3) || k.size(3) != v.size(3))
    invalid("scaled_dot_product_attention_flash_attention: Q/K/V should have the same head size");
  // Char (quantized) queries came after the Float mask check: the trees
  // that still match the mask to q's dtype take Float alone.
  const bool float_or_char = q.dtype == DType::f32 || (q.dtype == DType::i8 && !rev.mask_dtype_of_query);
  if (rev.float_only && !float_or_char) invalid("Query must be Float type");
  if (q.dtype != DType::f32 && q.dtype != DType::f16 && q.dtype != DType::bf16 && q.dtype != DType::i8)
    invalid("Query must be Float, Half, BFloat16, or Char type");
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    invalid("Key and Value must have the same data type as Query");
  if (mask && mask->dim() != 2) invalid("Attention mask must be a 2D tensor");
  // The earlier check's text repeats the rank check's: upstream's own slip.
  if (mask && rev.mask_dtype_of_query && mask->dtype != q.dtype) invalid("Attention mask must be a 2D tensor");
  if (mask && !rev.mask_dtype_of_query && mask->dtype != DType::f32) invalid("Attention mask must be a Float tensor");
}

// Scalar arithmetic of one numerics: double, or the kernel's f32. The f32
// steps are each computed in double and rounded to f32: the correctly
// rounded f32 result (53 >= 2 * 24 + 2 bits: double rounding is innocuous
// for +, -, *, /), as an f32 unit gives.
struct Arith {
  bool exact;
  DType pv_acc = DType::f32;  // where P @ V accumulates (a self-test mutant changes it)
  double round_acc(double x) const { return exact ? x : static_cast<float>(x); }
  double round_pv(double x) const {
    return exact ? x : round_to(pv_acc, static_cast<float>(x));
  }
  // Exact: double's exp, as the other exact kernels and the oracles take it.
  double exp(double x) const { return exact ? exp_no_underflow(x) : std::exp(static_cast<float>(x)); }
};

struct Shapes {
  int64_t B, Lq, Hq, D, Lkv, Hkv, Dv;
};

class FlashAttention {
 public:
  FlashAttention(const KernelArgs& a, Numerics n, KernelFault fault, int64_t threads, const EtRevision& rev)
      : q_(a.tensor(0)), k_(a.tensor(1)), v_(a.tensor(2)), mask_(a.optional_tensor(4)),
        has_mask_(mask_ && mask_->numel() > 0), arith_{n == Numerics::exact, fault.pv_accumulation},
        fault_(fault), rev_(rev), out_dtype_(a.out_dtype()), threads_(threads) {
    start_pos_ = a.integer(3);
    is_causal_ = a.flag(6, false);
    s_ = {q_.size(0), q_.size(1), q_.size(2), q_.size(3), v_.size(1), k_.size(2), v_.size(3)};
    double default_scale = 1.0 / std::sqrt(static_cast<double>(s_.D));
    scale_ = a.has(7) ? a.real(7) : default_scale;
    if (!arith_.exact) scale_ = static_cast<float>(scale_);
  }

  Tensor run() {
    // num_keys_for_causal_attention: -1 with a mask, else start_pos + Lq.
    int64_t kv_size = s_.Lkv;
    int64_t causal_keys = mask_ ? -1 : start_pos_ + s_.Lq;
    if (causal_keys > 0) {
      if (causal_keys > kv_size) fatal("num_keys_for_causal_attention must be <= kvSize");
      kv_size = causal_keys;
    }
    if (s_.Hkv > s_.Hq)
      fatal("FlashAttention does not support num kv heads > num query heads.Got num query heads=" +
            std::to_string(s_.Hq) + " num key heads:" + std::to_string(s_.Hkv));
    if (s_.Hq % s_.Hkv != 0)
      fatal("FlashAttention: num qyery heads must be divisible by num kv heads but got num query "
            "heads=" + std::to_string(s_.Hq) + " and num kv heads=" + std::to_string(s_.Hkv));
    if (has_mask_) {
      if (mask_->dim() != 2) fatal("attn_mask must be 2D");
      if (mask_->size(0) != s_.Lq)
        fatal("attn_mask shape mismatchattn_mask.size(0)=" + std::to_string(mask_->size(0)) +
              " qSize=" + std::to_string(s_.Lq));
      if (mask_->size(1) != kv_size)
        fatal("attn_mask shape mismatchattn_mask.size(1)=" + std::to_string(mask_->size(1)) +
              " kvSize=" + std::to_string(kv_size));
    }
    Tensor out(out_dtype_, q_.shape);  // resized to q.sizes()
    const int64_t q_split = std::min(q_split_size(s_.Lq), s_.Lq);
    // qSlice = (qSize - 1) / qSplitSize + 1 is computed before any work.
    if (q_split == 0)
      fatal("SIGFPE (integer divide by zero): qSlice = (qSize - 1) / qSplitSize + 1 with qSize = 0, "
            "qSplitSize = min(q_split_size, qSize) = 0");
    // parallel_for over B * Hq * qSlice items, query block fastest: task t
    // runs items [t * chunk, (t + 1) * chunk) in turn on its own scratch,
    // chunk = ceil(items / threads) (thread_parallel.cpp). The scratch starts
    // zeroed (std::vector<char>), and each query block resets qk_max_data
    // only: qk_sum_data keeps the previous block's sums (see update_row).
    const int64_t q_slice = (s_.Lq - 1) / q_split + 1;
    const int64_t items = s_.B * s_.Hq * q_slice;
    const int64_t chunk = std::max<int64_t>(1, (items + threads_ - 1) / threads_);
    std::vector<double> row_sum(q_split);
    for (int64_t z = 0; z < items; ++z) {
      if (z % chunk == 0) std::fill(row_sum.begin(), row_sum.end(), 0.0);
      const int64_t m = (z % q_slice) * q_split, h = (z / q_slice) % s_.Hq, b = z / (q_slice * s_.Hq);
      block(out, b, h, m, std::min(q_split, s_.Lq - m), kv_size, row_sum.data());
    }
    if (fault_.nan_to_zero)
      for (double& o : out.data)
        if (std::isnan(o)) o = 0.0;
    return out;
  }

 private:
  double q(int64_t b, int64_t i, int64_t h, int64_t e) const {
    return q_.data[((b * s_.Lq + i) * s_.Hq + h) * s_.D + e];
  }
  double k(int64_t b, int64_t j, int64_t h, int64_t e) const {
    return k_.data[((b * s_.Lkv + j) * s_.Hkv + h) * s_.D + e];
  }
  double v(int64_t b, int64_t j, int64_t h, int64_t e) const {
    return v_.data[((b * s_.Lkv + j) * s_.Hkv + h) * s_.Dv + e];
  }

  // The first column of kv block [n, n + kv_split) the causal fill writes
  // -inf from in row r of the query block at m (op_sdpa_impl.h): none (the
  // block's width) where the block holds no key past the row's last
  // position m + start_pos + r, 0 where the whole block is in its future.
  // Upstream fills only when m + start_pos <= n + kvSplitSize, and only the
  // rows with m + start_pos + row < n + kvSplitSize - 1: the others keep
  // every key of the block.
  int64_t causal_fill_from(int64_t m, int64_t r, int64_t n, int64_t kv_split, int64_t cols) const {
    if (!is_causal_) return cols;
    // The self-test fault aligns the fill top-left: its position drops start_pos.
    const int64_t m_start_pos = m + (fault_.causal_offset_ignores_start_pos ? 0 : start_pos_);
    if (m_start_pos > n + kv_split || m_start_pos + r >= n + kv_split - 1) return cols;
    const int64_t last_col = n > m_start_pos + r ? 0 : r + m_start_pos + 1 - n;
    return std::min(last_col, cols);
  }

  // One query block [m, m + rows) of head h: the online softmax over kv blocks.
  // `row_sum`: the task's qk_sum_data, as the previous block left it.
  void block(Tensor& out, int64_t b, int64_t h, int64_t m, int64_t rows, int64_t kv_size, double* row_sum) {
    constexpr double kNegInf = -std::numeric_limits<double>::infinity();
    const int64_t hk = h / (s_.Hq / s_.Hkv);
    const int64_t kv_split = std::min(kKvSplitSize, kv_size);
    // num_keys = min(m + start_pos + qBlockSize, kvSize): the kv loop's end.
    const int64_t reach = m + (fault_.num_keys_without_start_pos ? 0 : start_pos_) + rows;
    const int64_t num_keys = is_causal_ ? std::min(reach, kv_size) : kv_size;
    std::vector<double> row_max(rows, kNegInf), dst(rows * s_.Dv, 0);
    std::vector<double> x(kv_split);
    const int64_t mask_cols = has_mask_ ? mask_->shape[1] : 0;  // run() checked the mask is 2-D
    for (int64_t n = 0; n < num_keys; n += kv_split) {
      const int64_t cols = std::min(kv_split, kv_size - n);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = m + r;
        const int64_t fill_from = causal_fill_from(m, r, n, kv_split, cols);
        for (int64_t c = 0; c < cols; ++c) {
          double qk = 0;
          for (int64_t e = 0; e < s_.D; ++e)
            qk = arith_.round_acc(qk + arith_.round_acc(q(b, i, h, e) * k(b, n + c, hk, e)));
          // The causal -inf is written into q.k before the scale multiplies it.
          if (c >= fill_from) qk = kNegInf;
          double xv = arith_.round_acc(qk * scale_);
          if (has_mask_) xv = arith_.round_acc(xv + mask_->data[i * mask_cols + n + c]);
          x[c] = xv;
        }
        const double block_max = has_mask_ ? vector_max(x, cols) : fused_max(x, cols);
        update_row(r, cols, x, block_max, n > 0, row_max[r], row_sum[r], &dst[r * s_.Dv], b, n, hk);
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      // No zero-sum guard: a row with every key masked keeps the sum it
      // came in with: 0 * inf = NaN on a fresh scratch, 0 after a row that
      // had weights, NaN after a NaN sum.
      double inv = arith_.round_acc(1.0 / row_sum[r]);
      for (int64_t e = 0; e < s_.Dv; ++e) {
        // Exact: the division the kernel's 1 / sum and product stand for
        // (one rounding, not two).
        double o = arith_.exact ? dst[r * s_.Dv + e] / row_sum[r] : arith_.round_acc(dst[r * s_.Dv + e] * inv);
        out.data[((b * s_.Lq + m + r) * s_.Hq + h) * s_.D + e] = arith_.exact ? o : round_to(out_dtype_, o);
      }
    }
  }

  // With a mask: at::vec::reduce_all over vec::maximum, which propagates NaN.
  static double vector_max(const std::vector<double>& x, int64_t cols) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < cols; ++c) {
      if (std::isnan(x[c])) return x[c];
      mx = std::max(mx, x[c]);
    }
    return mx;
  }

  // Without a mask: _mul_reduce_max_fusion_kernel. vec::maximum over the
  // first kVectorLanes * (cols / kVectorLanes) scores propagates NaN, the
  // tail takes std::max(tmp_max, x) (a NaN x is dropped), and the result is
  // std::max(tail max, vector max): a NaN vector max is dropped too, so a
  // NaN in the vector part leaves the tail's max alone.
  static double fused_max(const std::vector<double>& x, int64_t cols) {
    const int64_t vec_end = kVectorLanes * (cols / kVectorLanes);
    double vec_max = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < vec_end; ++c)
      vec_max = std::isnan(vec_max) || std::isnan(x[c]) ? std::numeric_limits<double>::quiet_NaN()
                                                        : std::max(vec_max, x[c]);
    double tail_max = -std::numeric_limits<double>::infinity();
    for (int64_t c = vec_end; c < cols; ++c) tail_max = std::max(tail_max, x[c]);
    return std::max(tail_max, vec_max);
  }

  void update_row(int64_t r, int64_t cols, std::vector<double>& x, double block_max,
                  bool rescale, double& row_max, double& row_sum, double* dst,
                  int64_t b, int64_t n, int64_t hk) {
    // tmp_max = qk_max_data[row] > tmp_max ? qk_max_data[row] : tmp_max.
    // In a query block's first visited block row_max is -inf, so exp_tmp is
    // 0 and a finite carried sum drops out, but 0 * NaN keeps a NaN one.
    const double m_new = row_max > block_max ? row_max : block_max;
    // Before f3e8972de6 there was no skip: exp(-inf - -inf) is NaN below.
    if (m_new == -std::numeric_limits<double>::infinity() && !rev_.nan_for_masked_block) {
      // A fully masked block: P is zero-filled, max and sum stay, but the
      // block's P @ V still runs: 0 * V, NaN where V holds inf or NaN.
      for (int64_t e = 0; e < s_.Dv; ++e)
        for (int64_t c = 0; c < cols; ++c)
          dst[e] = arith_.round_pv(dst[e] + 0.0 * v(b, n + c, hk, e));
      return;
    }
    double exp_tmp = arith_.exp(row_max - m_new);
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) {
      x[c] = arith_.exp(x[c] - m_new);
      sum = arith_.round_acc(sum + x[c]);
      // P is cast to the activation dtype before P @ V.
      if (!arith_.exact) x[c] = round_to(q_.dtype, x[c]);
    }
    row_sum = arith_.round_acc(sum + arith_.round_acc(exp_tmp * row_sum));
    row_max = m_new;
    for (int64_t e = 0; e < s_.Dv; ++e) {
      double acc = rescale ? arith_.round_pv(dst[e] * exp_tmp) : dst[e];
      for (int64_t c = 0; c < cols; ++c)
        acc = arith_.round_pv(acc + arith_.round_acc(x[c] * v(b, n + c, hk, e)));
      dst[e] = acc;
    }
  }

  const Tensor &q_, &k_, &v_;
  const Tensor* mask_;
  // has_attn_mask = attn_mask.has_value() && numel() > 0: an empty mask adds
  // nothing and takes the unmasked max, while truncation stays keyed on
  // has_value() (mask_), so every key is attended.
  bool has_mask_;
  Arith arith_;
  KernelFault fault_;
  EtRevision rev_;
  DType out_dtype_;
  int64_t threads_;
  int64_t start_pos_ = 0;
  bool is_causal_ = false;
  double scale_ = 1.0;
  Shapes s_{};
};

}  // namespace

int64_t q_split_size(int64_t Lq) {
  if (Lq >= 768) return 256;
  if (Lq >= 192) return 64;
  return 32;
}

namespace {

// The call with its arguments bound (KernelArgs::bound).
std::vector<Tensor> custom_sdpa(const KernelArgs& a, Numerics numerics, KernelFault fault, int64_t threads,
                                const EtRevision& rev) {
  const Tensor &q = a.tensor(0), &k = a.tensor(1), &v = a.tensor(2);
  const Tensor* mask = a.optional_tensor(4);
  if (mask && a.flag(6, false)) recoverable("attn_mask and is_causal cannot be set at the same time");
  validate_args(q, k, v, mask, rev);
  if (q.dtype == DType::i8)
    throw KernelError(KernelError::Kind::unsupported, "quantized (Char) custom_sdpa is not modeled");
  (void)a.real(5, 0.0);  // drpout_p: ignored upstream, whatever its value
  return one_output(FlashAttention(a, numerics, fault, threads, rev).run());
}

}  // namespace

KernelFn custom_sdpa_kernel(Numerics numerics, KernelFault fault, int64_t threads, EtRevision rev) {
  return [numerics, fault, threads, rev](const KernelArgs& call) {
    // The schema's parameters after value are positional-or-keyword.
    std::optional<KernelArgs> storage;
    return custom_sdpa(call.bound(3, {"start_pos", "attn_mask", "drpout_p", "is_causal", "scale"}, storage),
                       numerics, fault, threads, rev);
  };
}

}  // namespace sdpa::llm
