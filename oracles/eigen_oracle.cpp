#include "oracles/eigen_oracle.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "harness/ir/compensated_sum.h"
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
  const double keep_factor = 1.0 / (1.0 - c.dropout_p);
  MatrixD scores, low, p(s.Lq, s.Lkv);  // reused by every (batch, head) block
  CompensatedRow acc;  // one output row's sums
  for (int64_t b = 0; b < call.batch(); ++b)
    for (int64_t h = 0; h < s.Hq; ++h) {
      call.scores_into(b, h, scores, &low);
      const KeyNorms norms = key_norms(call, b, h);
      double* dst = g.out.data.data() + (b * s.Hq + h) * s.Lq * s.Ev;
      for (int64_t i = 0; i < s.Lq; ++i) {
        const int64_t row = (b * s.Hq + h) * s.Lq + i;
        double* pi = p.data() + i * s.Lkv;
        double max = 0;
        const bool kept = softmax_row(scores.data() + i * s.Lkv, low.data() + i * s.Lkv, s.Lkv, pi, max);
        if (!kept) std::fill(pi, pi + s.Lkv, 0.0);
        g.fully_masked[row] = !kept;
        g.row_max_score[row] = max;
        facts->rows[row] = row_facts(call, b, h, i, scores.data() + i * s.Lkv, pi, norms);
        // A product, not a select: like aten's dropout, NaN * 0 stays NaN.
        if (c.dropout_p > 0)
          for (int64_t j = 0; j < s.Lkv; ++j)
            pi[j] *= dropout_keep(dropout, row * s.Lkv + j, c.dropout_p) ? keep_factor : 0.0;
        // P @ V, each output a compensated sum from the first term, in key
        // order (keys outer: v's rows are read contiguously). A fully
        // masked row has weights 0, and aten still multiplies them into V
        // (_safe_softmax, then matmul): 0, or NaN where V holds inf or NaN.
        double* out = dst + i * s.Ev;
        if (s.Lkv == 0) {
          std::fill(out, out + s.Ev, 0.0);
          continue;
        }
        compensated_row_products_from_first(pi, norms.v_rows.data(), s.Lkv, s.Ev, acc, out);
      }
    }
  g.cache = std::move(facts);
  return g;
}

}  // namespace sdpa
