// Models triton::sdpa_decode_splitk (ExecuTorch backends/cuda/triton/kernels/
// sdpa.py, semantics/llm-and-cuda.md §4.4): _validate_sdpa_inputs, then
// L_q == 1, H_q % H_kv == 0 and a power-of-2 D (no enable_gqa check: GQA and
// MQA run without the flag), is_causal ignored, the mask read from query row
// 0, num_splits = min(max(ceil(L_kv / 256), 1), 128) splits of
// ceil(L_kv / num_splits) keys, p = exp(s - phi) with the fixed phi (no
// running max, no rescaling), and a reduce that sums the partial numerators
// and denominators and gives 0 when the total is 0. SplitKMax::running_max
// models the later copy: a per-split running max, rescaled in the reduce.
// Its tl.dot(q, tl.trans(k)) contracts over D: no D < 16 compiles.
#include "backends/cuda/triton/triton_splitk_kernel.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "backends/cuda/triton/triton_common.h"

namespace sdpa::cuda_triton {
namespace {

constexpr long double kNegInf = -std::numeric_limits<long double>::infinity();

struct Dims {
  int64_t B, Hq, Hkv, Lkv, D;
};

// The wrapper reads B, H_q, L_q, D from query and H_kv, L_kv from key, and
// checks the rest only "with concrete shapes" (always, at run time).
Dims validate_splitk(const TritonCall& c) {
  const Tensor &q = *c.q, &k = *c.k;
  auto n = [](int64_t x) { return std::to_string(x); };
  if (q.size(2) != 1) runtime_error("sdpa_decode_splitk requires L_q == 1 (decode); got L_q=" + n(q.size(2)));
  if (k.size(1) == 0) throw KernelError(KernelError::Kind::recoverable, "ZeroDivisionError: integer modulo by zero");
  if (q.size(1) % k.size(1) != 0)
    runtime_error("H_q must be divisible by H_kv; got H_q=" + n(q.size(1)) + ", H_kv=" + n(k.size(1)));
  if (!is_power_of_2(q.size(3)))
    runtime_error("sdpa_decode_splitk requires power-of-2 head dim; got D=" + n(q.size(3)));
  return {q.size(0), q.size(1), k.size(1), k.size(2), q.size(3)};
}

// Nothing checks key and value against query: the programs index them with
// query's B and D and key's H and L, so a mismatch reads out of bounds once
// the compiled program runs.
void refuse_out_of_bounds(const TritonCall& c) {
  const Tensor &q = *c.q, &k = *c.k, &v = *c.v;
  if (k.size(0) != q.size(0) || k.size(3) != q.size(3) || v.shape != k.shape)
    throw KernelError(KernelError::Kind::unsupported,
                      "sdpa_decode_splitk with key/value shapes " + torch_size(k.shape) + ", " +
                          torch_size(v.shape) + " reads out of bounds: not modeled");
}

bool visible(const TritonCall& c, const Dims& d, int64_t b, int64_t j) {
  // mask_ptrs = Mask_ptr + b * stride_mb + 0 * stride_mq + offs_n * stride_mk: row 0.
  return !c.mask || c.mask->data[b * d.Lkv + j] != 0.0;
}

// One split's partial numerator (acc), denominator (l) and maximum (m), in f32.
struct Partial {
  std::vector<long double> acc;
  long double l = 0;
  long double m = kNegInf;
};

class SplitK {
 public:
  SplitK(const TritonCall& c, const Dims& d, SplitKMax max)
      : c_(c), d_(d), fixed_(max == SplitKMax::fixed_phi), scale_(static_cast<float>(sm_scale(c.scale, d.D))),
        phi_(static_cast<float>(c.phi)) {}

  // _sdpa_decode_splitk_kernel over [start, end) in BLOCK_N tiles.
  Partial split(int64_t b, int64_t h, int64_t hk, int64_t start, int64_t end) const {
    Partial part{std::vector<long double>(d_.D, 0)};
    std::vector<long double> s(kSplitKBlockN), p(kSplitKBlockN);
    for (int64_t n = start; n < end; n += kSplitKBlockN) {
      const int64_t cols = std::min(kSplitKBlockN, end - n);
      long double m_new = fixed_ ? phi_ : part.m;
      for (int64_t c = 0; c < cols; ++c) {
        s[c] = visible(c_, d_, b, n + c) ? ar_.f32(dot_qk(ar_, *c_.q, *c_.k, b, h, 0, hk, n + c) * scale_) : kNegInf;
        if (!fixed_) m_new = std::max(m_new, s[c]);
      }
      long double l_tile = 0;
      for (int64_t c = 0; c < cols; ++c) {
        // The fixed max: exp(s - 5) is inf in f32 above s = 93.7, and 0 below about -82.3.
        p[c] = m_new > kNegInf ? ar_.exp(ar_.f32(s[c] - m_new)) : 0.0L;
        l_tile = ar_.f32(l_tile + p[c]);
        p[c] = ar_.bf16(p[c]);  // P cast to bf16 before P @ V
      }
      const long double alpha = fixed_ ? 1.0L : ar_.exp(m_new > kNegInf ? ar_.f32(part.m - m_new) : 0.0L);
      for (int64_t e = 0; e < d_.D; ++e) {
        long double dot = 0;
        for (int64_t c = 0; c < cols; ++c) dot = ar_.f32(dot + p[c] * at4(*c_.v, b, hk, n + c, e));
        part.acc[e] = ar_.f32(ar_.f32(part.acc[e] * alpha) + dot);
      }
      part.l = ar_.f32(ar_.f32(part.l * alpha) + l_tile);
      part.m = m_new;
    }
    return part;
  }

  // _sdpa_decode_reduce_kernel: the partials summed (fixed phi) or rescaled by
  // exp(m - m_global) (running max); inv_l = l > 0 ? 1/l : 0.
  void head(Tensor& out, int64_t b, int64_t h) const {
    const int64_t hk = h / (d_.Hq / d_.Hkv);
    const int64_t splits = splitk_num_splits(d_.Lkv);
    const int64_t chunk = (d_.Lkv + splits - 1) / splits;
    std::vector<Partial> parts;
    long double m_global = kNegInf;
    for (int64_t s = 0; s < splits; ++s) {
      parts.push_back(split(b, h, hk, s * chunk, std::min(s * chunk + chunk, d_.Lkv)));
      m_global = std::max(m_global, parts.back().m);
    }
    std::vector<long double> acc(d_.D, 0);
    long double l = 0;
    for (const Partial& part : parts) {
      const long double w = fixed_ ? 1.0L
                            : part.m > kNegInf && m_global > kNegInf ? ar_.exp(ar_.f32(part.m - m_global)) : 0.0L;
      for (int64_t e = 0; e < d_.D; ++e) acc[e] = ar_.f32(acc[e] + ar_.f32(part.acc[e] * w));
      l = ar_.f32(l + ar_.f32(part.l * w));
    }
    const long double inv_l = l > 0 ? ar_.f32(1.0L / l) : 0.0L;
    for (int64_t e = 0; e < d_.D; ++e)
      out.data[(b * d_.Hq + h) * d_.D + e] = static_cast<double>(ar_.bf16(ar_.f32(acc[e] * inv_l)));
  }

 private:
  const TritonCall& c_;
  Dims d_;
  bool fixed_;
  TritonArith ar_{false};
  long double scale_, phi_;
};

// The intended result, exactly: softmax over the visible keys (a running max,
// so nothing overflows or underflows), 0 when no key is visible. Where the
// kernel's fixed phi overflows or underflows, the accuracy check reports the
// difference as the kernel's inaccuracy.
void exact_head(const TritonCall& c, const Dims& d, Tensor& out, int64_t b, int64_t h) {
  const TritonArith ar{true};
  const int64_t hk = h / (d.Hq / d.Hkv);
  const long double scale = sm_scale(c.scale, d.D);
  std::vector<long double> s(d.Lkv, kNegInf);
  long double m = kNegInf, l = 0;
  for (int64_t j = 0; j < d.Lkv; ++j)
    if (visible(c, d, b, j)) m = std::max(m, s[j] = dot_qk(ar, *c.q, *c.k, b, h, 0, hk, j) * scale);
  std::vector<long double> acc(d.D, 0);
  for (int64_t j = 0; j < d.Lkv && m > kNegInf; ++j) {
    const long double p = std::exp(s[j] - m);
    l += p;
    for (int64_t e = 0; e < d.D; ++e) acc[e] += p * at4(*c.v, b, hk, j, e);
  }
  for (int64_t e = 0; e < d.D; ++e)
    out.data[(b * d.Hq + h) * d.D + e] = l > 0 ? static_cast<double>(acc[e] / l) : 0.0;
}

}  // namespace

int64_t splitk_num_splits(int64_t Lkv) {
  const int64_t ceil = (Lkv + kSplitKLkvThreshold - 1) / kSplitKLkvThreshold;
  return std::min<int64_t>(std::max<int64_t>(ceil, 1), 128);
}

KernelFn triton_splitk_kernel(Numerics numerics, SplitKMax max) {
  return [numerics, max](const KernelArgs& a) {
    const TritonCall c = read_triton_call(a);
    validate_sdpa_inputs(c);
    const Dims d = validate_splitk(c);
    sm_scale(c.scale, d.D);
    prepare_mask_params(c.mask, d.B, 1, d.Lkv);
    check_dot_k(d.D, "tl.dot(q, tl.trans(k)) in _sdpa_decode_splitk_kernel");
    refuse_out_of_bounds(c);
    refuse_unmodeled_mask(c.mask);
    // is_causal: "no-op at L_q=1", accepted and ignored; the query attends to every key.
    Tensor out(a.out_dtype(), {d.B, d.Hq, 1, d.D});
    const SplitK kernel(c, d, max);
    for (int64_t b = 0; b < d.B; ++b)
      for (int64_t h = 0; h < d.Hq; ++h) {
        if (numerics == Numerics::exact) exact_head(c, d, out, b, h);
        else kernel.head(out, b, h);
      }
    return one_output(std::move(out));
  };
}

}  // namespace sdpa::cuda_triton
