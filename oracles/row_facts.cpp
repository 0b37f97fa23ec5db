#include "oracles/row_facts.h"

#include <cmath>
#include <limits>

#include "harness/ir/compensated_sum.h"
#include "harness/ir/fmax_inline.h"

namespace sdpa {

KeyNorms key_norms(const AttentionCall& call, int64_t b, int64_t h) {
  const ConcreteSizes& s = call.sizes();
  KeyNorms n;
  n.k.resize(s.Lkv);
  n.v.resize(s.Lkv);
  n.v_rows.resize(s.Lkv);
  for (int64_t j = 0; j < s.Lkv; ++j) {
    const double* k = call.key_row(b, h, j);
    CompensatedSum sq;
    for (int64_t e = 0; e < s.E; ++e) sq.add(k[e] * k[e]);
    n.k[j] = std::sqrt(sq.value());
    const double* v = n.v_rows[j] = call.value_row(b, h, j);
    double vmax = 0;  // a NaN makes it inf: the row's bound is then infinite
    for (int64_t e = 0; e < s.Ev; ++e) {
      const double a = std::fabs(v[e]);
      if (!(a <= vmax)) vmax = std::isnan(a) ? std::numeric_limits<double>::infinity() : a;
    }
    n.v[j] = vmax;
  }
  return n;
}

RowFacts row_facts(const AttentionCall& call, int64_t b, int64_t h, int64_t i, const double* scores,
                   const double* p, const KeyNorms& norms) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  const ConcreteSizes& s = call.sizes();
  RowFacts r;
  const double* q = call.query_row(b, h, i);
  CompensatedSum sq;
  for (int64_t e = 0; e < s.E; ++e) sq.add(q[e] * q[e]);
  r.qn = std::sqrt(sq.value());
  double row_max = kNegInf;
  for (int64_t j = 0; j < s.Lkv; ++j) {
    const double x = scores[j];
    if (x == kNegInf) continue;
    ++r.n;
    if (row_max < x) row_max = x;
    r.finite = r.finite && std::isfinite(x);
    r.kn = fmax_inline(r.kn, norms.k[j]);
    r.vmax = fmax_inline(r.vmax, norms.v[j]);
  }
  // Keys more than 40 below the max weigh < e^-40: their logit errors do not count.
  for (int64_t j = 0; j < s.Lkv && r.n > 0; ++j)
    if (scores[j] >= row_max - 40) r.M = fmax_inline(r.M, std::fabs(scores[j]));
  r.finite = r.finite && std::isfinite(r.qn) && std::isfinite(r.kn) && std::isfinite(r.vmax);
  if (!r.finite || r.n == 0) return r;
  // sum_j p_j |v_je| over the keys in order: a few columns in registers
  // (in_lane_groups), more with keys outer for row-major v (side by side;
  // the buffer reused across rows: one allocation per thread, not per row).
  if (s.Ev < kSideBySideOutputs) {
    thread_local std::vector<const double*> v;  // each weighted key's value row
    v.resize(s.Lkv);
    for (int64_t j = 0; j < s.Lkv; ++j) v[j] = p[j] == 0 ? nullptr : norms.v_rows[j];
    in_lane_groups(s.Ev, [&](int64_t e, auto lanes) {
      constexpr int N = decltype(lanes)::value;
      double w[N] = {};
      for (int64_t j = 0; j < s.Lkv; ++j)
        if (v[j])
          for (int l = 0; l < N; ++l) w[l] += p[j] * std::fabs(v[j][e + l]);
      for (int l = 0; l < N; ++l) r.W = fmax_inline(r.W, w[l]);
    });
    return r;
  }
  thread_local std::vector<double> w;
  w.assign(s.Ev, 0.0);
  for (int64_t j = 0; j < s.Lkv; ++j) {
    if (p[j] == 0) continue;
    const double pj = p[j];
    const double* v = norms.v_rows[j];
    for (int64_t e = 0; e < s.Ev; ++e) w[e] += pj * std::fabs(v[e]);
  }
  for (double x : w) r.W = fmax_inline(r.W, x);
  return r;
}

}  // namespace sdpa
