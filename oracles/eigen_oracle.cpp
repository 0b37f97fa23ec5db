#include "oracles/eigen_oracle.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "oracles/attention_call.h"

namespace sdpa {
namespace {

void check_sizes(const ConcreteSizes& got, const ConcreteSizes& want) {
  if (got.batch != want.batch || got.Hq != want.Hq || got.Hkv != want.Hkv || got.Lq != want.Lq ||
      got.Lkv != want.Lkv || got.E != want.E || got.Ev != want.Ev ||
      got.mask_shape != want.mask_shape)
    throw std::invalid_argument("eigen oracle: the tensors do not have the case's sizes");
}

// Softmax of one score row into `p`, its largest score into `max`; false
// when every score is -inf (the row is fully masked and its weights stay 0).
bool softmax_row(const MatrixL& s, int64_t i, MatrixL& p, long double& max) {
  constexpr long double kNegInf = -std::numeric_limits<long double>::infinity();
  max = kNegInf;
  bool all_masked = true;
  for (int64_t j = 0; j < s.cols(); ++j) {
    max = std::fmax(max, s(i, j));  // NaN scores still reach exp() below
    all_masked = all_masked && s(i, j) == kNegInf;
  }
  if (all_masked) return false;
  long double total = 0;
  // A weight below double's range is 0, as in aten (f64 and narrower): 0
  // times an inf of V is NaN, where long double's tiny weight would give inf.
  constexpr long double kTiny = std::numeric_limits<double>::denorm_min() / 2.0L;
  for (int64_t j = 0; j < s.cols(); ++j) {
    const long double w = std::exp(s(i, j) - max);
    total += p(i, j) = w < kTiny ? 0.0L : w;
  }
  p.row(i) /= total;
  return true;
}

}  // namespace

Golden eigen_golden(const Case& c, const CaseTensors& t, const Assignment& at) {
  AttentionCall call(c, t);
  check_sizes(call.sizes(), concrete_sizes(c, at));
  const ConcreteSizes& s = call.sizes();
  Shape out_shape = s.batch;
  out_shape.insert(out_shape.end(), {s.Hq, s.Lq, s.Ev});
  Golden g;
  g.out = Tensor(DType::f64, out_shape);
  g.fully_masked.assign(call.rows(), 0);
  g.row_max_score.assign(call.rows(), 0.0);
  const CounterStream dropout(c.data.seed, "dropout");
  const long double keep_factor = 1.0L / (1.0L - static_cast<long double>(c.dropout_p));
  for (int64_t b = 0; b < call.batch(); ++b)
    for (int64_t h = 0; h < s.Hq; ++h) {
      const MatrixL scores = call.scores(b, h);
      MatrixL p = MatrixL::Zero(s.Lq, s.Lkv);
      for (int64_t i = 0; i < s.Lq; ++i) {
        const int64_t row = (b * s.Hq + h) * s.Lq + i;
        long double max = 0;
        g.fully_masked[row] = !softmax_row(scores, i, p, max);
        g.row_max_score[row] = static_cast<double>(max);
        if (c.dropout_p <= 0) continue;
        // A product, not a select: like aten's dropout, NaN * 0 stays NaN.
        for (int64_t j = 0; j < s.Lkv; ++j)
          p(i, j) *= dropout_keep(dropout, row * s.Lkv + j, c.dropout_p) ? keep_factor : 0.0L;
      }
      MatrixL out = p.lazyProduct(call.value(b, h));
      double* dst = g.out.data.data() + (b * s.Hq + h) * s.Lq * s.Ev;
      // A fully masked row has weights 0, and aten still multiplies them
      // into V (_safe_softmax, then matmul): 0, or NaN where V holds inf or NaN.
      for (int64_t i = 0; i < s.Lq; ++i) {
        for (int64_t e = 0; e < s.Ev; ++e) dst[i * s.Ev + e] = static_cast<double>(out(i, e));
      }
    }
  return g;
}

}  // namespace sdpa
