#include "oracles/error_model.h"

#include <cmath>
#include <limits>

#include "oracles/attention_call.h"

namespace sdpa {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The case-wide constants of the model.
struct Model {
  DType dtype;
  double u_acc, u_out, d, scale, f;
  bool dropout;
};

// What the bound of one query row reads from the call.
struct RowInputs {
  int64_t n = 0;  // kept keys
  double qn = 0, kn = 0, M = 0, vmax = 0, g_max = 0;
  bool finite = true;
};

struct RowBound {
  double logit_err = 0, softmax_rel = 0, bound = 0, typical = 0;
  bool capped = false;
};

RowInputs row_inputs(const MatrixL& scores, const MatrixL& q, const MatrixL& k, const MatrixL& v,
                     int64_t i, const double* g_row, int64_t Ev) {
  RowInputs r;
  r.qn = static_cast<double>(q.row(i).norm());
  long double row_max = -std::numeric_limits<long double>::infinity();
  for (int64_t j = 0; j < scores.cols(); ++j) {
    long double s = scores(i, j);
    if (s == -std::numeric_limits<long double>::infinity()) continue;
    ++r.n;
    row_max = std::fmax(row_max, s);
    r.finite = r.finite && std::isfinite(s);
    r.kn = std::fmax(r.kn, static_cast<double>(k.row(j).norm()));
    r.vmax = std::fmax(r.vmax, static_cast<double>(v.row(j).cwiseAbs().maxCoeff()));
  }
  // Keys more than 40 below the max weigh < e^-40: their logit errors do not count.
  for (int64_t j = 0; j < scores.cols() && r.n > 0; ++j)
    if (scores(i, j) >= row_max - 40)
      r.M = std::fmax(r.M, static_cast<double>(std::fabs(scores(i, j))));
  for (int64_t e = 0; e < Ev; ++e) {
    r.finite = r.finite && std::isfinite(g_row[e]);
    r.g_max = std::fmax(r.g_max, std::fabs(g_row[e]));
  }
  r.finite = r.finite && std::isfinite(r.qn) && std::isfinite(r.kn) && std::isfinite(r.vmax);
  return r;
}

RowBound row_bound(const Model& m, const RowInputs& r) {
  RowBound b;
  const double out_rounding = ulp(m.dtype, r.g_max);
  if (!r.finite) {
    b.bound = b.typical = kInf;
    return b;
  }
  if (r.n == 0) {
    b.bound = b.typical = out_rounding;
    return b;
  }
  const double n = static_cast<double>(r.n), dot = m.scale * r.qn * r.kn;
  // Dropout: 1/(1-p) rounded, and its product with each weight.
  const double dropout_rounding = m.dropout ? m.u_acc + m.u_out : 0.0;
  auto bound_with = [&](double d, double n_sum, double& logit, double& rel) {
    // 5 u_out: sqrt(|scale|) rounded and applied to q and to k (PyTorch
    // splits the scale), or scale rounded and applied once; the stored score.
    logit = dot * (d * m.u_acc + 5 * m.u_out) + m.u_out * r.M;
    rel = 2 * logit + (n_sum + 2) * m.u_acc + m.u_out + dropout_rounding;
    return (rel + n_sum * m.u_acc) * r.vmax * m.f;
  };
  double typical_logit, typical_rel;
  b.typical = bound_with(std::sqrt(m.d), std::sqrt(n), typical_logit, typical_rel) + out_rounding;
  const double first_order = bound_with(m.d, n, b.logit_err, b.softmax_rel);
  const double cap = r.vmax * m.f * (2 + (2 * n + 3) * m.u_acc + 2 * m.u_out);
  b.capped = cap < first_order;
  b.bound = std::fmin(first_order, cap) + out_rounding;
  b.typical = std::fmin(b.typical, b.bound);
  return b;
}

nlohmann::json describe(const Model& m, const RowInputs& r, const RowBound& b, int64_t row,
                        const Shape& rows) {
  std::vector<int64_t> index(rows.size());
  for (int64_t d = static_cast<int64_t>(rows.size()) - 1, rest = row; d >= 0; --d) {
    index[d] = rest % rows[d];
    rest /= rows[d];
  }
  return {{"dtype", dtype_name(m.dtype)},
          {"u_acc", m.u_acc},
          {"u_out", m.u_out},
          {"d", m.d},
          {"n", r.n},
          {"scale", m.scale},
          {"qn", r.qn},
          {"kn", r.kn},
          {"M", r.M},
          {"Vmax", r.vmax},
          {"dropout_factor", m.f},
          {"logit_err", b.logit_err},
          {"softmax_rel", b.softmax_rel},
          {"capped", b.capped},
          {"golden_row_max", r.g_max},
          {"bound", b.bound},
          {"typical_estimate", b.typical},
          {"row", row},
          {"row_index", index}};
}

}  // namespace

ErrorBound error_bound(const Case& c, const CaseTensors& t, const Golden& g, DType dtype) {
  AttentionCall call(c, t);
  const ConcreteSizes& s = call.sizes();
  ErrorBound eb;
  if (!is_floating(dtype)) {
    eb.row_bound.assign(call.rows(), kInf);
    eb.row_typical.assign(call.rows(), kInf);
    eb.inputs = {{"dtype", dtype_name(dtype)},
                 {"note",
                  "no float error model for an integer dtype: quantized stages are "
                  "checked against their own fake-quantized references"}};
    return eb;
  }
  const Model m{dtype,
                unit_roundoff(accumulation_type(dtype)),
                unit_roundoff(dtype),
                static_cast<double>(s.E),
                std::fabs(c.effective_scale()),
                c.dropout_p > 0 ? 1.0 / (1.0 - c.dropout_p) : 1.0,
                c.dropout_p > 0};
  Shape rows = s.batch;
  rows.insert(rows.end(), {s.Hq, s.Lq});
  eb.row_bound.resize(call.rows());
  eb.row_typical.resize(call.rows());
  double worst = -1;
  for (int64_t b = 0; b < call.batch(); ++b)
    for (int64_t h = 0; h < s.Hq; ++h) {
      const MatrixL scores = call.scores(b, h), q = call.query(b, h), k = call.key(b, h),
                    v = call.value(b, h);
      for (int64_t i = 0; i < s.Lq; ++i) {
        const int64_t row = (b * s.Hq + h) * s.Lq + i;
        RowInputs r = row_inputs(scores, q, k, v, i, g.out.data.data() + row * s.Ev, s.Ev);
        RowBound rb = row_bound(m, r);
        eb.row_bound[row] = rb.bound;
        eb.row_typical[row] = rb.typical;
        // The inputs printed are those of the largest finite bound.
        double rank = std::isfinite(rb.bound) ? rb.bound : -0.5;
        if (rank > worst) {
          worst = rank;
          eb.inputs = describe(m, r, rb, row, rows);
        }
      }
    }
  return eb;
}

}  // namespace sdpa
