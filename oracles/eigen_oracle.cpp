#include "oracles/eigen_oracle.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "oracles/attention_call.h"
#include "oracles/row_facts.h"

namespace sdpa {
namespace {

void check_sizes(const ConcreteSizes& got, const ConcreteSizes& want) {
  if (got.batch != want.batch || got.Hq != want.Hq || got.Hkv != want.Hkv || got.Lq != want.Lq ||
      got.Lkv != want.Lkv || got.E != want.E || got.Ev != want.Ev ||
      got.mask_shape != want.mask_shape)
    throw std::invalid_argument("eigen oracle: the tensors do not have the case's sizes");
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
  auto facts = std::make_shared<CallFacts>();
  facts->rows.resize(call.rows());
  const CounterStream dropout(c.data.seed, "dropout");
  const long double keep_factor = 1.0L / (1.0L - static_cast<long double>(c.dropout_p));
  MatrixL scores, p(s.Lq, s.Lkv);  // reused by every (batch, head) block
  std::vector<const double*> v_rows(s.Lkv);  // of the block's kv head
  for (int64_t b = 0; b < call.batch(); ++b)
    for (int64_t h = 0; h < s.Hq; ++h) {
      call.scores_into(b, h, scores);
      const KeyNorms norms = key_norms(call, b, h);
      for (int64_t j = 0; j < s.Lkv; ++j) v_rows[j] = call.value_row(b, h, j);
      double* dst = g.out.data.data() + (b * s.Hq + h) * s.Lq * s.Ev;
      for (int64_t i = 0; i < s.Lq; ++i) {
        const int64_t row = (b * s.Hq + h) * s.Lq + i;
        long double* pi = p.data() + i * s.Lkv;
        long double max = 0;
        const bool kept = softmax_row(scores.data() + i * s.Lkv, s.Lkv, pi, max);
        if (!kept) std::fill(pi, pi + s.Lkv, 0.0L);
        g.fully_masked[row] = !kept;
        g.row_max_score[row] = static_cast<double>(max);
        facts->rows[row] = row_facts(call, b, h, i, scores.data() + i * s.Lkv, pi, norms);
        // A product, not a select: like aten's dropout, NaN * 0 stays NaN.
        if (c.dropout_p > 0)
          for (int64_t j = 0; j < s.Lkv; ++j)
            pi[j] *= dropout_keep(dropout, row * s.Lkv + j, c.dropout_p) ? keep_factor : 0.0L;
        // P @ V summed as Eigen's coefficient-based product does: from the
        // first term, in key order. A fully masked row has weights 0, and
        // aten still multiplies them into V (_safe_softmax, then matmul):
        // 0, or NaN where V holds inf or NaN.
        // Each output summed in a register (an x87 accumulator stored and
        // reloaded per key stalls on the 80-bit store).
        for (int64_t e = 0; e < s.Ev; ++e) {
          long double acc = 0.0L;
          for (int64_t j = 0; j < s.Lkv; ++j) {
            const long double term = pi[j] * static_cast<long double>(v_rows[j][e]);
            acc = j == 0 ? term : acc + term;
          }
          dst[i * s.Ev + e] = static_cast<double>(acc);
        }
      }
    }
  g.cache = std::move(facts);
  return g;
}

}  // namespace sdpa
