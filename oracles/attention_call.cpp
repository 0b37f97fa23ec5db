#include "oracles/attention_call.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "harness/ir/long_exp.h"

namespace sdpa {
namespace {

[[noreturn]] void reject(const std::string& why) {
  throw std::invalid_argument("attention oracle: " + why);
}

// (heads, len) of a [batch..., H, L, D] or [batch..., L, H, D] tensor.
std::pair<int64_t, int64_t> heads_and_len(const Tensor& t, Layout layout) {
  int64_t r = t.dim();
  if (layout == Layout::bhsd) return {t.shape[r - 3], t.shape[r - 2]};
  return {t.shape[r - 2], t.shape[r - 3]};
}

// x + -inf, as x87 computes it: NaN for a NaN or +inf score (the NaN
// itself, or the default NaN), -inf otherwise. The common case is answered
// without the x87 add, which takes an infinite operand slowly.
long double plus_neg_inf(long double x) {
  constexpr long double kNegInf = -std::numeric_limits<long double>::infinity();
  if (std::isnan(x) || x == -kNegInf) return x + kNegInf;
  return kNegInf;
}

}  // namespace

AttentionCall::AttentionCall(const Case& c, const CaseTensors& t) : c_(c), t_(t), s_{} {
  const Tensor &q = t.q, &k = t.k, &v = t.v;
  s_.start_pos = t.start_pos;
  if (q.dim() < 3 || k.dim() != q.dim() || v.dim() != q.dim())
    reject("q, k and v must have one rank >= 3");
  s_.batch.assign(q.shape.begin(), q.shape.end() - 3);
  if (!std::equal(s_.batch.begin(), s_.batch.end(), k.shape.begin()) ||
      !std::equal(s_.batch.begin(), s_.batch.end(), v.shape.begin()))
    reject("q, k and v have different batch dims");
  std::tie(s_.Hq, s_.Lq) = heads_and_len(q, c.layout);
  std::tie(s_.Hkv, s_.Lkv) = heads_and_len(k, c.layout);
  s_.E = q.shape.back();
  s_.Ev = v.shape.back();
  if (k.shape.back() != s_.E) reject("q and k head dims differ");
  if (heads_and_len(v, c.layout) != std::make_pair(s_.Hkv, s_.Lkv))
    reject("k and v differ in heads or length");
  bool gqa = c.enable_gqa && s_.Hq % s_.Hkv == 0;
  if (s_.Hq != s_.Hkv && s_.Hkv != 1 && !gqa)
    reject("Hq " + std::to_string(s_.Hq) + " and Hkv " + std::to_string(s_.Hkv) +
           " need enable_gqa with Hq % Hkv == 0");

  if (!t.mask) return;
  s_.mask_shape = t.mask->shape;
  Shape scores = s_.batch;
  scores.insert(scores.end(), {s_.Hq, s_.Lq, s_.Lkv});
  const Shape& ms = s_.mask_shape;
  if (ms.empty() || ms.size() > scores.size())
    reject("mask rank " + std::to_string(ms.size()) + " does not fit scores " + shape_str(scores));
  mask_strides_.assign(scores.size(), 0);
  auto own = strides_of(ms);
  size_t lead = scores.size() - ms.size();
  for (size_t d = 0; d < ms.size(); ++d) {
    if (ms[d] != 1 && ms[d] != scores[lead + d])
      reject("mask " + shape_str(ms) + " does not broadcast to scores " + shape_str(scores));
    mask_strides_[lead + d] = ms[d] == 1 ? 0 : own[d];
  }
}

int64_t AttentionCall::kv_head(int64_t h) const {
  if (s_.Hq == s_.Hkv) return h;
  if (s_.Hkv == 1) return 0;
  return h / (s_.Hq / s_.Hkv);
}

MatrixL AttentionCall::block(const Tensor& t, int64_t heads, int64_t b, int64_t h, int64_t len,
                             int64_t dim) const {
  MatrixL m(len, dim);
  for (int64_t l = 0; l < len; ++l) {
    const int64_t row = row_index(heads, b, h, len, l);
    for (int64_t d = 0; d < dim; ++d) m(l, d) = t.data[row * dim + d];
  }
  return m;
}

const double* AttentionCall::query_row(int64_t b, int64_t h, int64_t l) const {
  return t_.q.data.data() + row_index(s_.Hq, b, h, s_.Lq, l) * s_.E;
}
const double* AttentionCall::key_row(int64_t b, int64_t h, int64_t l) const {
  return t_.k.data.data() + row_index(s_.Hkv, b, kv_head(h), s_.Lkv, l) * s_.E;
}
const double* AttentionCall::value_row(int64_t b, int64_t h, int64_t l) const {
  return t_.v.data.data() + row_index(s_.Hkv, b, kv_head(h), s_.Lkv, l) * s_.Ev;
}

MatrixL AttentionCall::query(int64_t b, int64_t h) const {
  return block(t_.q, s_.Hq, b, h, s_.Lq, s_.E);
}
MatrixL AttentionCall::key(int64_t b, int64_t h) const {
  return block(t_.k, s_.Hkv, b, kv_head(h), s_.Lkv, s_.E);
}
MatrixL AttentionCall::value(int64_t b, int64_t h) const {
  return block(t_.v, s_.Hkv, b, kv_head(h), s_.Lkv, s_.Ev);
}

int64_t AttentionCall::mask_base(int64_t b, int64_t h) const {
  int64_t offset = h * mask_strides_[s_.batch.size()];
  for (int64_t d = static_cast<int64_t>(s_.batch.size()) - 1; d >= 0; --d) {
    offset += (b % s_.batch[d]) * mask_strides_[d];
    b /= s_.batch[d];
  }
  return offset;
}

MatrixL AttentionCall::scores(int64_t b, int64_t h) const {
  MatrixL s;
  scores_into(b, h, s);
  return s;
}

void AttentionCall::scores_into(int64_t b, int64_t h, MatrixL& s) const {
  constexpr long double kNegInf = -std::numeric_limits<long double>::infinity();
  s.resize(s_.Lq, s_.Lkv);
  const int64_t E = s_.E;
  const long double scale = static_cast<long double>(c_.effective_scale());
  const Tensor* mask = t_.mask ? &*t_.mask : nullptr;
  const int64_t base = mask ? mask_base(b, h) : 0;
  const int64_t si = mask ? mask_strides_.end()[-2] : 0, sj = mask ? mask_strides_.back() : 0;
  const bool is_bool = mask && mask->dtype == DType::b8;
  // Each score is finished in a register and stored once: an x87 value
  // stored and read back per step stalls on the 80-bit store.
  for (int64_t i = 0; i < s_.Lq; ++i) {
    const double* q = query_row(b, h, i);
    for (int64_t j = 0; j < s_.Lkv; ++j) {
      // As Eigen's coefficient-based product sums: from the first term, in order.
      const double* k = key_row(b, h, j);
      long double dot = E > 0 ? static_cast<long double>(q[0]) * static_cast<long double>(k[0]) : 0.0L;
      for (int64_t e = 1; e < E; ++e) dot += static_cast<long double>(q[e]) * static_cast<long double>(k[e]);
      long double x = dot * scale;  // once, after the dot product
      // aten turns bool and causal masks into an additive 0 / -inf and adds
      // it (convert_boolean_attn_mask), the causal one first: a NaN or +inf
      // score stays NaN where dropped. Top-left keeps j <= i, bottom-right
      // j <= i + Lkv - Lq, start-pos j <= i + start_pos.
      if (c_.is_causal && !c_.causal_keeps(i, j, s_.Lq, s_.Lkv, s_.start_pos)) x = plus_neg_inf(x);
      if (mask) {
        const double m = mask->data[base + i * si + j * sj];
        if (is_bool) {
          if (m == 0.0) x = plus_neg_inf(x);  // bool: true keeps
        } else if (m == kNegInf) {
          x = plus_neg_inf(x);
        } else {
          x += m;
        }
      }
      s(i, j) = x;
    }
  }
}

bool softmax_row(const long double* scores, int64_t n, long double* p, long double& max) {
  constexpr long double kNegInf = -std::numeric_limits<long double>::infinity();
  constexpr long double kTiny = std::numeric_limits<double>::denorm_min() / 2.0L;
  max = kNegInf;
  bool all_masked = true;
  for (int64_t j = 0; j < n; ++j) {
    // fmax without its call: the row max starts at -inf and is never NaN,
    // and a NaN score still reaches exp() below.
    if (max < scores[j]) max = scores[j];
    all_masked = all_masked && scores[j] == kNegInf;
  }
  if (all_masked) return false;
  long double total = 0;
  for (int64_t j = 0; j < n; ++j) {
    // A dropped key's weight: -inf - max is -inf (max is not -inf here, or
    // every kept score is NaN), e^-inf 0; without the x87 subtraction, which
    // takes an infinite operand slowly.
    const long double w = scores[j] == kNegInf && max != kNegInf ? 0.0L : exp_long(scores[j] - max);
    total += p[j] = w < kTiny ? 0.0L : w;
  }
  for (int64_t j = 0; j < n; ++j) p[j] /= total;
  return true;
}

}  // namespace sdpa
