#include "oracles/attention_call.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "harness/ir/compensated_sum.h"
#include "harness/ir/exp_no_underflow.h"

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

MatrixD AttentionCall::block(const Tensor& t, int64_t heads, int64_t b, int64_t h, int64_t len,
                             int64_t dim) const {
  MatrixD m(len, dim);
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

MatrixD AttentionCall::query(int64_t b, int64_t h) const {
  return block(t_.q, s_.Hq, b, h, s_.Lq, s_.E);
}
MatrixD AttentionCall::key(int64_t b, int64_t h) const {
  return block(t_.k, s_.Hkv, b, kv_head(h), s_.Lkv, s_.E);
}
MatrixD AttentionCall::value(int64_t b, int64_t h) const {
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

MatrixD AttentionCall::scores(int64_t b, int64_t h) const {
  MatrixD s;
  scores_into(b, h, s);
  return s;
}

void AttentionCall::scores_into(int64_t b, int64_t h, MatrixD& s, MatrixD* low) const {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  s.resize(s_.Lq, s_.Lkv);
  if (low) low->resize(s_.Lq, s_.Lkv);
  thread_local std::vector<double> dot_low, scaled_low;
  dot_low.resize(static_cast<size_t>(s_.Lkv));
  scaled_low.resize(static_cast<size_t>(s_.Lkv));
  const int64_t E = s_.E;
  const double scale = c_.effective_scale();
  const Tensor* mask = t_.mask ? &*t_.mask : nullptr;
  const int64_t base = mask ? mask_base(b, h) : 0;
  const int64_t si = mask ? mask_strides_.end()[-2] : 0, sj = mask ? mask_strides_.back() : 0;
  const bool is_bool = mask && mask->dtype == DType::b8;
  // The block's keys transposed, [E, Lkv]: one query element's products
  // with every key are then a contiguous row, added side by side.
  thread_local std::vector<double> keys_t;
  keys_t.resize(static_cast<size_t>(E * s_.Lkv));
  for (int64_t j = 0; j < s_.Lkv; ++j) {
    const double* k = key_row(b, h, j);
    for (int64_t e = 0; e < E; ++e) keys_t[e * s_.Lkv + j] = k[e];
  }
  thread_local CompensatedRow dots;
  for (int64_t i = 0; i < s_.Lq; ++i) {
    const double* q = query_row(b, h, i);
    double* row = s.data() + i * s_.Lkv;
    // Each dot product from its first term, as Eigen's coefficient-based
    // product sums, in index order.
    if (E == 0) {
      std::fill(row, row + s_.Lkv, 0.0);
      std::fill(dot_low.begin(), dot_low.end(), 0.0);
    } else {
      compensated_products_from_first(q, keys_t.data(), E, s_.Lkv, dots, row, dot_low.data());
    }
    double* low_row = low ? low->data() + i * s_.Lkv : nullptr;
    // The scale once, after the dot product, over the whole row (a loop
    // that vectorizes); the low parts gather what the roundings lose.
    two_products_by(row, scale, s_.Lkv, row, scaled_low.data());
    for (int64_t j = 0; j < s_.Lkv; ++j) {
      double x = row[j];
      double lo = scaled_low[j] + dot_low[j] * scale;
      // aten turns bool and causal masks into an additive 0 / -inf and adds
      // it (convert_boolean_attn_mask), the causal one first: a NaN or +inf
      // score stays NaN where dropped. Top-left keeps j <= i, bottom-right
      // j <= i + Lkv - Lq, start-pos j <= i + start_pos.
      if (c_.is_causal && !c_.causal_keeps(i, j, s_.Lq, s_.Lkv, s_.start_pos)) x += kNegInf;
      if (mask) {
        const double m = mask->data[base + i * si + j * sj];
        if (is_bool) {
          if (m == 0.0) x += kNegInf;  // bool: true keeps
        } else {
          // aten adds the mask in its dtype: the score is rounded to double
          // here, once, from its double-double (lowest-f32 fills leave a
          // uniform row, as in aten).
          double e = 0.0;
          two_sum_into(x, e, m);
          if (std::isfinite(x)) x += e + lo;  // -inf, or NaN: e is NaN
          lo = 0.0;
        }
      }
      row[j] = x;
      if (low_row) low_row[j] = std::isfinite(x) ? lo : 0.0;
    }
  }
}

bool softmax_row(const double* scores, const double* low, int64_t n, double* p, double& max) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  max = kNegInf;
  double max_low = 0.0;  // the low part of the first score at the max
  bool all_masked = true;
  for (int64_t j = 0; j < n; ++j) {
    // fmax without its call: the row max starts at -inf and is never NaN,
    // and a NaN score still reaches exp() below.
    if (max < scores[j]) max = scores[j], max_low = low ? low[j] : 0.0;
    all_masked = all_masked && scores[j] == kNegInf;
  }
  if (all_masked) return false;
  // Past 2^53 the max's low part can exceed 1 (near 1e300 it is about
  // 1e284): left in every exponent, every weight would underflow to 0 and
  // the row be 0 / 0, so there it is taken out (a common factor the sum
  // divides out). Below, it is within a rounding of the max and stays, as
  // on an additive mask's path, which rounds each score to double.
  if (!(std::fabs(max_low) > 1.0) || !std::isfinite(max_low)) max_low = 0.0;
  CompensatedSum total;
  for (int64_t j = 0; j < n; ++j) {
    // NaN - max is NaN, and reaches exp. scores[j] - max is exact for the
    // keys that weigh (Sterbenz), and the low parts are added after it.
    const double x = low ? (scores[j] - max) + (low[j] - max_low) : scores[j] - max;
    p[j] = exp_no_underflow(x);
    total.add(p[j]);
  }
  const double sum = total.value();
  for (int64_t j = 0; j < n; ++j) p[j] /= sum;
  return true;
}

}  // namespace sdpa
