// Models triton::sdpa (ExecuTorch backends/cuda/triton/kernels/sdpa.py):
// the wrapper's checks in order with their texts, scale 0.0 read as
// 1/sqrt(D), a bool mask of exactly [B, 1, Lq, Lkv], causal only with
// Lq == Lkv, mask and causal both applied, GQA kv head h // (Hq / Hkv), and
// the two Triton programs: the power-of-2 one (exp, inv_l = l > 0 ? 1/l : 0)
// and the non-power-of-2 one (exp2 with the scale times log2(e), l starting
// at 1, acc / l), both with f32 scores and P cast to bf16 before P @ V;
// the power-of-2 program skips a KV tile no row of its query tile keeps
// (by the mask when there is one, else by causal) and, with neither, lets
// its last tile's zero-padded keys (k and v loaded as 0) into the softmax
// as scores of 0; the other program masks the padding and skips no tile.
// The power-of-2 program does not compile for D < 16 (tl.dot's K).
// executorch=2025-12-17 (SdpaTree::dec_2025) changes the checks, the mask's
// reading (head 0 for every head) and the softmax (no guards, no skipping).
#include "backends/cuda/triton/triton_sdpa_kernel.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "backends/cuda/triton/triton_common.h"

namespace sdpa::cuda_triton {
namespace {

constexpr long double kNegInf = -std::numeric_limits<long double>::infinity();
constexpr long double kLog2e = 1.4426950408889634L;

struct Dims {
  int64_t B, Hq, Hkv, Lq, Lkv, D;
};

// sdpa.py _validate_qkv_shapes: each check with its RuntimeError text, in order.
Dims validate_qkv_shapes(const TritonCall& c, SdpaTree tree) {
  const Tensor &q = *c.q, &k = *c.k, &v = *c.v;
  auto n = [](int64_t x) { return std::to_string(x); };
  if (!(q.size(0) == k.size(0) && k.size(0) == v.size(0)))
    runtime_error("Batch dimension must match; got B_q=" + n(q.size(0)) + ", B_k=" + n(k.size(0)) +
                  ", B_v=" + n(v.size(0)) + ".");
  if (tree == SdpaTree::dec_2025) {
    if (!(q.size(1) == k.size(1) && k.size(1) == v.size(1)))
      runtime_error("Head dimension must match; got H_q=" + n(q.size(1)) + ", H_k=" + n(k.size(1)) +
                    ", H_v=" + n(v.size(1)) + ".");
  } else if (k.size(1) != v.size(1)) {
    runtime_error("K and V head counts must match; got H_k=" + n(k.size(1)) + ", H_v=" + n(v.size(1)) + ".");
  } else if (c.enable_gqa) {
    if (k.size(1) == 0) throw KernelError(KernelError::Kind::recoverable, "ZeroDivisionError: integer modulo by zero");
    if (q.size(1) % k.size(1) != 0)
      runtime_error("GQA requires H_q divisible by H_kv; got H_q=" + n(q.size(1)) + ", H_kv=" + n(k.size(1)) + ".");
  } else if (q.size(1) != k.size(1)) {
    runtime_error("Head counts must match (or use enable_gqa=True); got H_q=" + n(q.size(1)) +
                  ", H_k=" + n(k.size(1)) + ".");
  }
  if (!(q.size(3) == k.size(3) && k.size(3) == v.size(3)))
    runtime_error("Head dimension must match across Q, K, V; got D_q=" + n(q.size(3)) + ", D_k=" +
                  n(k.size(3)) + ", D_v=" + n(v.size(3)) + ".");
  if (k.size(2) != v.size(2))
    runtime_error("Key and Value must have the same sequence length; got L_k=" + n(k.size(2)) +
                  ", L_v=" + n(v.size(2)) + ".");
  return {q.size(0), q.size(1), k.size(1), q.size(2), k.size(2), q.size(3)};
}

// 4495d959e2's _prepare_mask_params: bool, then shape[0], shape[2] and
// shape[3] against B, L_q and L_kv (Python's `or` stops at the first that
// differs; an index past the rank raises IndexError); dim 1 is not read.
void prepare_mask_params_2025_12_17(const Tensor* mask, int64_t B, int64_t Lq, int64_t Lkv) {
  if (!mask) return;
  if (mask->dtype != DType::b8) runtime_error("attn_mask must have dtype torch.bool");
  auto differs = [&](int64_t i, int64_t want) {
    if (i >= mask->dim()) throw KernelError(KernelError::Kind::recoverable, "IndexError: tuple index out of range");
    return mask->size(i) != want;
  };
  if (differs(0, B) || differs(2, Lq) || differs(3, Lkv))
    runtime_error("attn_mask shape mismatch: expected [B=" + std::to_string(B) + ", H, L_q=" + std::to_string(Lq) +
                  ", L_kv=" + std::to_string(Lkv) + "], got " + torch_size(mask->shape));
}

// The wrapper's checks of a tree, in order, up to the launch.
Dims check_call(const TritonCall& c, SdpaTree tree) {
  validate_sdpa_inputs(c);
  const bool dec_2025 = tree == SdpaTree::dec_2025;
  if (dec_2025 && c.enable_gqa) runtime_error("enable_gqa must be False (not supported in this implementation).");
  const Dims d = validate_qkv_shapes(c, tree);
  if (c.is_causal && d.Lq != d.Lkv)
    runtime_error("Causal masking requires L_q == L_kv; got L_q=" + std::to_string(d.Lq) + ", L_kv=" +
                  std::to_string(d.Lkv) + "." +
                  (dec_2025 ? "" : " For decode (L_q < L_kv), use an explicit bool mask instead."));
  sm_scale(c.scale, d.D);  // evaluated before the mask checks upstream
  if (dec_2025)
    prepare_mask_params_2025_12_17(c.mask, d.B, d.Lq, d.Lkv);
  else
    prepare_mask_params(c.mask, d.B, d.Lq, d.Lkv);
  return d;
}

// Which Triton program runs, and how it computes.
struct Program {
  int64_t block_m;      // query rows of a tile
  int64_t block_n;
  bool exp2;            // non-power-of-2: scale pre-multiplied by log2(e), exp2
  long double l_init;   // non-power-of-2: l_i starts at 1.0 (harmless: alpha is 0 at the first live tile)
  bool guarded_inverse; // power-of-2: inv_l = l > 0 ? 1/l : 0; else acc / l
  // Power-of-2 only: block_active skips a KV tile no row of the query tile
  // keeps, and with neither mask nor causal nothing masks the last tile's
  // padded keys past Lkv (the non-power-of-2 program's kv_col_mask does).
  bool skips_tiles;
  bool scores_padding;
  bool safe_softmax = true;  // safe_diff: a tile before a row's first kept key adds p = 0, alpha = 1
};

Program program_for(int64_t D, bool exact, SdpaFault fault, SdpaTree tree) {
  Program p{kPow2BlockM, kPow2BlockN, false, 0.0L, true, true, true};
  if (!is_power_of_2(D)) {
    // _launch_non_pow2_kernel: BLOCK_D = next_pow2(D) clamped to [16, 256], BLOCK_N 128 (64 at BLOCK_D 256).
    if (D > 256 && !exact)
      throw KernelError(KernelError::Kind::unsupported,
                        "triton.sdpa non-power-of-2 D > 256 computes only BLOCK_D = 256 dims and leaves "
                        "the rest of the output unwritten: not modeled");
    const int64_t block_d = D <= 16 ? 16 : D <= 32 ? 32 : D <= 64 ? 64 : D <= 128 ? 128 : 256;
    p = {32, block_d >= 256 ? 64 : 128, true, 1.0L, false, false, false};
  }
  // Before c8f0e61b69 (safe_diff) and 6b5273f289 (block_active).
  if (fault == SdpaFault::unsafe_softmax || tree == SdpaTree::dec_2025) p.safe_softmax = p.skips_tiles = false;
  // Exact: the programs' two arithmetics are the same numbers; the tiles,
  // the skips and the padding stay those of D's program.
  if (exact) {
    p.exp2 = false;
    p.l_init = 0.0L;
    p.guarded_inverse = true;
  }
  return p;
}

class StandardSdpa {
 public:
  StandardSdpa(const TritonCall& c, const Dims& d, bool exact, DType out_dtype, SdpaFault fault, SdpaTree tree)
      : c_(c), d_(d), ar_{exact}, prog_(program_for(d.D, exact, fault, tree)), out_dtype_(out_dtype) {
    const double s = sm_scale(c.scale, d.D);
    // sm_scale: tl.float32; the non-pow2 program multiplies it by log2(e) in f32.
    scale_ = exact ? s : static_cast<float>(s);
    if (prog_.exp2) scale_ = ar_.f32(scale_ * static_cast<float>(kLog2e));
  }

  Tensor run() {
    mark_live_tiles();
    Tensor out(out_dtype_, {d_.B, d_.Hq, d_.Lq, d_.D});
    for (int64_t b = 0; b < d_.B; ++b)
      for (int64_t h = 0; h < d_.Hq; ++h)
        for (int64_t i = 0; i < d_.Lq; ++i) row(out, b, h, i);
    return out;
  }

 private:
  // The score of key j for query row i, or -inf where causal or the mask drops it.
  long double score(int64_t b, int64_t h, int64_t i, int64_t hk, int64_t j) const {
    // Causal is offs_n > seq_pos (top-left; Lq == Lkv makes it bottom-right too).
    if (!kept(b, i, j)) return kNegInf;
    return ar_.f32(dot_qk(ar_, *c_.q, *c_.k, b, h, i, hk, j) * scale_);
  }

  long double exp(long double x) const { return prog_.exp2 ? ar_.exp2(x) : ar_.exp(x); }

  bool kept(int64_t b, int64_t i, int64_t j) const {
    if (c_.is_causal && j > i) return false;
    return !c_.mask || mask_keeps(b, i, j);
  }
  // The programs read the mask at b * stride(0) + i * stride(2) + j *
  // stride(3): head 0's rows where a tree lets dim 1 exceed 1.
  bool mask_keeps(int64_t b, int64_t i, int64_t j) const {
    return c_.mask->data[((b * c_.mask->size(1)) * d_.Lq + i) * d_.Lkv + j] != 0.0;
  }

  // The power-of-2 program's block_active for each (batch, BLOCK_M row
  // tile, BLOCK_N key tile), since 6b5273f289: with a mask, whether it keeps
  // a key of the tile for some row (causal is not consulted); without one,
  // under causal, whether the tile starts at or before the tile's last row.
  // A skipped tile's 0 * V is never computed. The mask is [B, 1, Lq, Lkv],
  // shared by heads. The other program runs every tile.
  void mark_live_tiles() {
    m_tiles_ = (d_.Lq + prog_.block_m - 1) / prog_.block_m;
    n_tiles_ = (d_.Lkv + prog_.block_n - 1) / prog_.block_n;
    live_.assign(static_cast<size_t>(d_.B * m_tiles_ * n_tiles_), prog_.skips_tiles ? 0 : 1);
    if (!prog_.skips_tiles) return;
    for (int64_t b = 0; b < d_.B; ++b)
      for (int64_t i = 0; i < d_.Lq; ++i)
        for (int64_t j = 0; j < d_.Lkv; ++j)
          if (c_.mask ? mask_keeps(b, i, j) : !c_.is_causal || j <= i)
            live_[(b * m_tiles_ + i / prog_.block_m) * n_tiles_ + j / prog_.block_n] = 1;
  }

  // A padded key's score: q . 0 (NaN where q holds inf or NaN) times the scale.
  long double padding_score(int64_t b, int64_t h, int64_t i) const {
    long double dot = 0;
    for (int64_t e = 0; e < d_.D; ++e) dot = ar_.f32(dot + at4(*c_.q, b, h, i, e) * 0.0L);
    return ar_.f32(dot * scale_);
  }

  bool live(int64_t b, int64_t i, int64_t n) const {
    return live_[(b * m_tiles_ + i / prog_.block_m) * n_tiles_ + n / prog_.block_n] != 0;
  }

  void row(Tensor& out, int64_t b, int64_t h, int64_t i) {
    const int64_t hk = h / (d_.Hq / d_.Hkv);  // GQA: kv head h // num_groups
    long double m = kNegInf, l = prog_.l_init;
    std::vector<long double> acc(d_.D, 0), s(prog_.block_n), p(prog_.block_n);
    // Neither mask nor causal: the last tile's keys past Lkv (k and v
    // loaded as 0) score q . 0 and take part in the softmax (power-of-2).
    const bool padding = prog_.scores_padding && !c_.mask && !c_.is_causal;
    const long double pad_score = padding ? padding_score(b, h, i) : 0.0L;
    for (int64_t n = 0; n < d_.Lkv; n += prog_.block_n) {
      if (!live(b, i, n)) continue;
      const int64_t keys = std::min(prog_.block_n, d_.Lkv - n);
      const int64_t cols = padding ? prog_.block_n : keys;
      long double m_new = m;
      for (int64_t c = 0; c < cols; ++c)
        m_new = std::max(m_new, s[c] = c < keys ? score(b, h, i, hk, n + c) : pad_score);
      // safe_diff: no key kept so far (m_new = -inf) gives p = 0 and alpha = 1,
      // where exp(-inf - -inf) would be NaN.
      const bool guarded = prog_.safe_softmax && m_new == kNegInf;
      long double l_tile = 0;
      for (int64_t c = 0; c < cols; ++c) {
        p[c] = guarded ? 0.0L : exp(ar_.f32(s[c] - m_new));
        l_tile = ar_.f32(l_tile + p[c]);
        p[c] = ar_.bf16(p[c]);  // p_f32.to(tl.bfloat16) before P @ V
      }
      const long double alpha = exp(guarded ? 0.0L : ar_.f32(m - m_new));
      for (int64_t e = 0; e < d_.D; ++e) acc[e] = pv(acc[e], alpha, p, cols, b, hk, n, e);
      l = ar_.f32(l * alpha + l_tile);
      m = m_new;
    }
    for (int64_t e = 0; e < d_.D; ++e) {
      long double o = prog_.guarded_inverse ? ar_.f32(acc[e] * (l > 0 ? ar_.f32(1.0L / l) : 0.0L))
                                            : ar_.f32(acc[e] / l);
      out.data[((b * d_.Hq + h) * d_.Lq + i) * d_.D + e] = static_cast<double>(ar_.exact ? o : ar_.bf16(o));
    }
  }

  // pow2: acc * alpha + tl.dot(p_bf16, v); non-pow2: tl.dot(p_bf16, v, acc * alpha).
  long double pv(long double acc, long double alpha, const std::vector<long double>& p, int64_t cols,
                 int64_t b, int64_t hk, int64_t n, int64_t e) const {
    long double dot = prog_.guarded_inverse ? 0.0L : ar_.f32(acc * alpha);
    for (int64_t c = 0; c < cols; ++c)
      dot = ar_.f32(dot + p[c] * (n + c < d_.Lkv ? at4(*c_.v, b, hk, n + c, e) : 0.0));  // padded v: 0
    return prog_.guarded_inverse ? ar_.f32(ar_.f32(acc * alpha) + dot) : dot;
  }

  const TritonCall& c_;
  Dims d_;
  TritonArith ar_;
  Program prog_;
  DType out_dtype_;
  long double scale_ = 1.0L;
  int64_t m_tiles_ = 0, n_tiles_ = 0;
  std::vector<char> live_;
};

}  // namespace

KernelFn triton_sdpa_kernel(Numerics numerics, SdpaFault fault, SdpaTree tree) {
  return [numerics, fault, tree](const KernelArgs& a) {
    const TritonCall c = read_triton_call(a);
    const Dims d = check_call(c, tree);
    // The power-of-2 program's tl.dot(q, tl.trans(k)) contracts over
    // HEAD_DIM = D; the other program's over BLOCK_D >= 16.
    if (is_power_of_2(d.D)) check_dot_k(d.D, "tl.dot(q, tl.trans(k)) in _sdpa_fwd_kernel_body");
    refuse_unmodeled_mask(c.mask);
    return one_output(StandardSdpa(c, d, numerics == Numerics::exact, a.out_dtype(), fault, tree).run());
  };
}

}  // namespace sdpa::cuda_triton
