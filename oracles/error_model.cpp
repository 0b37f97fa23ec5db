#include "oracles/error_model.h"

#include <cmath>
#include <limits>

#include "harness/ir/fmax_inline.h"
#include "oracles/attention_call.h"
#include "oracles/row_facts.h"

namespace sdpa {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The case-wide constants of the model.
struct Model {
  KernelNumerics::Kind kind;
  FloatNumerics fp;
  QuantizedNumerics quant;
  double u_a = 0, u_op = 0, u_sc = 0, u_p = 0, d = 0, scale = 0, f = 1;
  double signed_scale = 0;  // the effective scale with its sign (the scores before a mask)
  bool dropout = false, additive_mask = false;
  double s_q = 0, s_k = 0, s_v = 0, s_o = 0;  // quantization steps of this run
  double e_q = 0, e_k = 0, e_v = 0, e_o = 0;  // the most one element moves when quantized
};

// What the bound of one query row reads from the call.
struct RowInputs {
  int64_t n = 0;  // kept keys
  double qn = 0, kn = 0, M = 0, vmax = 0, g_max = 0;
  double W = 0;                  // max_e sum_j p_j |v_je|
  double q_l1 = 0, qlogit = 0;   // quantized: |q_i|_1, the largest logit error over kept keys
  double quant_weighted = 0;     // quantized: the largest per-element output term
  double score_max = 0;          // quantized: the row's largest kept score
  double softmax_rel = 0;        // quantized: the largest weight's relative error
  double softmax_rel_mean = 0;   // quantized: sum_j p_j rel_j, what the output's term averages
  double norm_lo = 0;            // quantized: the least the kernel's normalizer is of the golden's
  bool finite = true;
};

// Per key of one quantized row (scratch reused from row to row): the score
// a grid raised it to (-inf: none), its logit error, and its weight's
// relative error.
struct KeyTerms {
  std::vector<double> raised, logit, rel;
};

struct RowBound {
  double logit_err = 0, softmax_rel = 0, bound = 0, typical = 0;
  bool capped = false;
};

// How far x falls outside a grid's range (0 inside it, or no grid read).
double outside(const Int8Grid& g, double x) {
  if (g.step == 0 || !std::isfinite(x)) return 0;
  return std::fmax(0.0, std::fmax(x - g.hi, g.lo - x));
}

// How far the farthest element of x falls outside the grid's range.
double farthest_outside(const Int8Grid& g, const std::vector<double>& x) {
  double far = 0;
  for (double e : x) far = std::fmax(far, outside(g, e));
  return far;
}

// The step a tensor is charged: the grid's where the graph declares a finer
// one than `step` (max|x| / qmax), never a coarser one.
double charged_step(const Int8Grid& g, double step) { return g.step > 0 ? std::fmin(g.step, step) : step; }

// The most quantizing one element of `x` moves it: half the charged step,
// or, where the quantizer clips tails by design, how far the farthest
// element falls outside the grid's range.
double element_error(const QuantizedNumerics& qn, const Int8Grid& g, double step, const std::vector<double>& x) {
  const double half = step * (0.5 + 0x1p-15);
  return qn.ranges_clip && g.step > 0 ? std::fmax(half, farthest_outside(g, x)) : half;
}

// Whether a grid of the scores can clip a score (a range read, the
// observer clipping tails by design).
bool clips(const QuantizedNumerics& qn, const Int8Grid& g) { return qn.ranges_clip && g.step > 0; }

// The largest kept score of row i.
double row_max(const MatrixD& scores, int64_t i) {
  double max = -kInf;
  for (int64_t j = 0; j < scores.cols(); ++j) max = std::fmax(max, scores(i, j));
  return max;
}

// What clipping x to grid g does to a score: past the top it is clipped
// down, a logit error of that distance (not charged to a key more than 40
// below the row's max, `negligible`: moving down only lowers its e^-40 of
// the row, which P's rounding of it, min(step/2, its weight), already
// charges); below the bottom within a step, clipped up, a logit error too.
// Farther below (a -1e4 mask fill) no logit error bounds it: the kernel's
// score rises to lo + (score - x) (x the score without the mask, or the
// score itself), returned (-inf: none).
double clip_terms(const Int8Grid& g, double x, double score, bool negligible, double& logit) {
  if (x > g.hi && !negligible) logit += x - g.hi;
  if (x >= g.lo) return -kInf;
  if (g.lo - x <= g.step) {
    logit += g.lo - x;
    return -kInf;
  }
  return g.lo + (score - x);
}

// The logit error of each kept key of row i (their largest in qlogit),
// and each key's score where a grid clips it up from far below (-inf
// elsewhere): such a key weighs at most exp(raised - max + logit) of the
// row. The scores' grid clips the masked scores, the unmasked one
// (q·k)·scale before a mask's add.
void logit_terms(const Model& m, const MatrixD& scores, const MatrixD& q, const MatrixD& k, int64_t i,
                 RowInputs& r, KeyTerms& keys) {
  const QuantizedNumerics& qn = m.quant;
  r.score_max = row_max(scores, i);
  const auto n = static_cast<size_t>(scores.cols());
  keys.raised.assign(n, -kInf);
  keys.logit.assign(n, 0.0);
  keys.rel.assign(n, 0.0);
  std::vector<double>& raised = keys.raised;
  for (int64_t j = 0; j < scores.cols(); ++j) {
    const double s = scores(i, j);
    if (s == -kInf) continue;
    const double k_l1 = k.row(j).cwiseAbs().sum();
    double e = m.scale * (m.e_q * k_l1 + m.e_k * r.q_l1 + m.d * m.e_q * m.e_k) +
               qn.multiplier_rel * std::fabs(s) + qn.score_step;
    // The kernel adds an additive mask in f32 (the golden in double): half
    // an ulp of the masked score, 2^-11 of a row masked at -1e4.
    if (m.additive_mask) e += unit_roundoff(DType::f32) * std::fabs(s);
    const bool negligible = s < r.score_max - 40;
    if (clips(qn, qn.scores)) raised[j] = clip_terms(qn.scores, s, s, negligible, e);
    if (clips(qn, qn.unmasked_scores)) {
      const double unmasked = m.signed_scale * q.row(i).dot(k.row(j));
      raised[j] = std::fmax(raised[j], clip_terms(qn.unmasked_scores, unmasked, s, negligible, e));
    }
    keys.logit[j] = e;
    r.qlogit = std::fmax(r.qlogit, e);
  }
}

// Each kept weight's relative error, key by key. The kernel's weight is
// p_j e^(±logit_j) / D, with D its normalizer over the golden's (Z, at
// least 1: the row's max adds 1) between norm_lo = sum_k p_k e^-logit_k (a
// raised key only rises, so every key counts) and the sum of p_k e^logit_k
// over keys not raised plus e^(raised_k - max + logit_k) over raised ones;
// compounded with the softmax's own rounding, (n + 2) u. With every logit
// error equal and no key raised this is the row-wide expm1(2 logit) +
// (n + 2) u e^(2 logit); a key with a large error but a small weight no
// longer lends it to every other key.
void softmax_terms(const Model& m, const MatrixD& scores, const std::vector<double>& p, int64_t i,
                   RowInputs& r, KeyTerms& keys) {
  double lo = 0, hi = 0;
  for (int64_t j = 0; j < scores.cols(); ++j) {
    if (scores(i, j) == -kInf) continue;
    lo += p[j] * std::exp(-keys.logit[j]);
    if (keys.raised[j] > -kInf)
      hi += std::exp(keys.raised[j] - r.score_max + keys.logit[j]);
    else if (p[j] > 0)  // 0·inf is no weight
      hi += p[j] * std::exp(keys.logit[j]);
  }
  r.norm_lo = lo;
  const double own = (r.n + 2) * m.quant.softmax_unit;
  r.softmax_rel = r.softmax_rel_mean = 0;
  for (int64_t j = 0; j < scores.cols(); ++j) {
    if (scores(i, j) == -kInf) continue;
    const double up = std::exp(keys.logit[j]) / lo - 1, down = 1 - std::exp(-keys.logit[j]) / hi;
    keys.rel[j] = (1 + std::fmax(up, down)) * (1 + own) - 1;
    r.softmax_rel = std::fmax(r.softmax_rel, keys.rel[j]);
    r.softmax_rel_mean += p[j] * keys.rel[j];
  }
}

// The most a key clipped up from far below weighs in the kernel (0 for a
// key no grid raised): its raised score and logit error over the least
// normalizer.
double clipped_weight(const RowInputs& r, const KeyTerms& keys, int64_t j) {
  const double raised = keys.raised[j];
  return raised > -kInf ? std::exp(raised - r.score_max + keys.logit[j]) / r.norm_lo : 0.0;
}

// How far quantizing a weight the kernel computes as at most w moves it:
// half a step, and at most w itself (a weight under half a step rounds to
// 0, so a long row's small weights are charged what they weigh, not half a
// step each); past the top of P's range, where the quantizer clips tails,
// at least down to it.
double prob_moved(const Model& m, double w) {
  const QuantizedNumerics& qn = m.quant;
  const double moved = std::fmin(qn.prob_step / 2, w);
  return qn.ranges_clip && qn.prob.step > 0 ? std::fmax(moved, w - qn.prob.hi) : moved;
}

// The largest output term of row i: each weight within its rel of p (and
// the softmax's absolute error, and a clipped key's weight), then
// quantized.
void output_terms(const Model& m, const MatrixD& scores, const MatrixD& v, const std::vector<double>& p,
                  const KeyTerms& keys, int64_t i, RowInputs& r) {
  const QuantizedNumerics& qn = m.quant;
  for (int64_t e = 0; e < v.cols(); ++e) {
    double weighted = 0, rounded = 0;
    for (int64_t j = 0; j < scores.cols(); ++j) {
      if (scores(i, j) == -kInf) continue;
      const double a = std::fabs(v(j, e)) + m.e_v;
      const double extra = qn.softmax_abs + clipped_weight(r, keys, j);
      weighted += keys.rel[j] * p[j] * a;
      rounded += (m.f * extra + prob_moved(m, m.f * (p[j] * (1 + keys.rel[j]) + extra))) * a;
    }
    // A NaN term (an inf weight times a zero v) is no bound: the cap decides.
    const double term = m.f * weighted + rounded;
    r.quant_weighted = std::isnan(term) ? kInf : std::fmax(r.quant_weighted, term);
  }
}

// What the bound reads of one row: the facts (the oracle's, or computed
// here the same way), the golden row, and for quantized numerics the terms
// of the quantization steps.
RowInputs row_inputs(const RowFacts& f, const double* g_row, int64_t Ev) {
  RowInputs r;
  r.n = f.n;
  r.qn = f.qn;
  r.kn = f.kn;
  r.M = f.M;
  r.vmax = f.vmax;
  r.W = f.W;
  r.finite = f.finite;
  for (int64_t e = 0; e < Ev; ++e) {
    r.finite = r.finite && std::isfinite(g_row[e]);
    r.g_max = fmax_inline(r.g_max, std::fabs(g_row[e]));
  }
  return r;
}

void add_quantized_terms(const Model& m, const MatrixD& scores, const MatrixD& q, const MatrixD& k,
                         const MatrixD& v, const std::vector<double>& p, int64_t i, RowInputs& r,
                         KeyTerms& keys) {
  r.q_l1 = static_cast<double>(q.row(i).cwiseAbs().sum());
  logit_terms(m, scores, q, k, i, r, keys);
  softmax_terms(m, scores, p, i, r, keys);
  // No least normalizer (every weight below double's range): no
  // first-order bound, the cap alone.
  if (!std::isfinite(r.softmax_rel)) {
    r.quant_weighted = kInf;
    return;
  }
  output_terms(m, scores, v, p, keys, i, r);
}

RowBound quantized_row_bound(const Model& m, const RowInputs& r) {
  RowBound b;
  const double n = static_cast<double>(r.n), vq = r.vmax + 2 * m.e_v;
  b.logit_err = r.qlogit;
  b.softmax_rel = r.softmax_rel;
  // The weights sum to at most f (dropout's 1 / (1 - p)), which multiplies v's
  // step and the output's magnitude.
  const double first_order = r.quant_weighted + m.f * m.e_v + m.e_o +
                             (m.quant.multiplier_rel + 2 * unit_roundoff(DType::f32)) * m.f * vq;
  // Kernel and golden are weighted sums of (dequantized) v rows. The
  // kernel's softmax normalizes over its own scores, so whatever the logit
  // errors and clipped keys (the first-order bound may be inf: a row masked
  // at -1e4 below the scores' grid), its weights sum to 1 within the fixed point's
  // roundings, and P's to that within half a step each.
  const double sum_rel = (n + 2) * m.quant.softmax_unit + n * m.quant.softmax_abs;
  const double cap = (m.f * (2 + sum_rel) + n * m.quant.prob_step / 2) * vq + m.e_o;
  b.capped = cap < first_order;
  b.bound = b.typical = std::fmin(first_order, cap);
  return b;
}

// The smallest normal value of t: below it a kernel's exp may flush to 0
// (XNNPACK's f32 exp does below -87.3) or lose relative precision.
double smallest_normal(DType t) { return ulp(t, 0.0) / (2 * unit_roundoff(t)); }

RowBound float_row_bound(const Model& m, const RowInputs& r) {
  RowBound b;
  const double out_rounding = ulp(m.fp.storage, r.g_max);
  // Each weight may underflow (flushed, or subnormal in P's type) by up to
  // the smallest normal of the type the exponential is computed or stored in.
  const double underflow = static_cast<double>(r.n) * r.vmax * m.f *
                           std::fmax(smallest_normal(m.fp.accumulation), smallest_normal(m.fp.probabilities));
  const double n = static_cast<double>(r.n), dot = m.scale * r.qn * r.kn;
  const double dropout_rounding = m.dropout ? m.u_a + m.u_p : 0.0;
  const double split = m.fp.split_scale ? 2 * m.u_a : 0.0;
  auto bound_with = [&](double d, double n_sum, double& logit, double& rel) {
    logit = dot * (d * m.u_a + 2 * m.u_op + split) + m.u_sc * r.M * (m.additive_mask ? 2 : 1);
    rel = std::expm1(2 * logit) + (n_sum + 2) * m.u_a + m.u_p + dropout_rounding;
    return (rel + n_sum * m.u_a) * r.W * m.f;
  };
  double typical_logit, typical_rel;
  b.typical = bound_with(std::sqrt(m.d), std::sqrt(n), typical_logit, typical_rel) + out_rounding;
  const double first_order = bound_with(m.d, n, b.logit_err, b.softmax_rel);
  const double cap = r.vmax * m.f * (2 + (2 * n + 3) * m.u_a + 2 * m.u_p);
  b.capped = cap < first_order;
  b.bound = std::fmin(first_order, cap) + out_rounding + underflow;
  b.typical = std::fmin(b.typical + underflow, b.bound);
  return b;
}

RowBound row_bound(const Model& m, const RowInputs& r) {
  RowBound b;
  if (!r.finite) {
    b.bound = b.typical = kInf;
    return b;
  }
  if (r.n == 0) {
    b.bound = b.typical = m.kind == KernelNumerics::Kind::quantized ? m.e_o : ulp(m.fp.storage, r.g_max);
    return b;
  }
  return m.kind == KernelNumerics::Kind::quantized ? quantized_row_bound(m, r) : float_row_bound(m, r);
}

nlohmann::json describe_numerics(const Model& m) {
  if (m.kind == KernelNumerics::Kind::quantized)
    return {{"numerics", "quantized"}, {"input_qmax", m.quant.input_qmax},
            {"s_q", m.s_q}, {"s_k", m.s_k}, {"s_v", m.s_v}, {"s_o", m.s_o},
            {"e_q", m.e_q}, {"e_k", m.e_k}, {"e_v", m.e_v}, {"e_o", m.e_o},
            {"score_step", m.quant.score_step}, {"prob_step", m.quant.prob_step},
            {"multiplier_rel", m.quant.multiplier_rel}, {"softmax_unit", m.quant.softmax_unit},
            {"softmax_abs", m.quant.softmax_abs},
            {"score_range", {m.quant.scores.lo, m.quant.scores.hi}},
            {"unmasked_score_range", {m.quant.unmasked_scores.lo, m.quant.unmasked_scores.hi}},
            {"ranges_clip", m.quant.ranges_clip}};
  return {{"numerics", m.kind == KernelNumerics::Kind::exact ? "exact" : "float"},
          {"dtype", dtype_name(m.fp.storage)}, {"accumulation", dtype_name(m.fp.accumulation)},
          {"operands", dtype_name(m.fp.operands)}, {"scores", dtype_name(m.fp.scores)},
          {"probabilities", dtype_name(m.fp.probabilities)}, {"split_scale", m.fp.split_scale},
          {"u_acc", m.u_a}, {"u_out", unit_roundoff(m.fp.storage)}, {"u_p", m.u_p}};
}

nlohmann::json describe(const Model& m, const RowInputs& r, const RowBound& b, int64_t row,
                        const Shape& rows) {
  std::vector<int64_t> index(rows.size());
  for (int64_t d = static_cast<int64_t>(rows.size()) - 1, rest = row; d >= 0; --d) {
    index[d] = rest % rows[d];
    rest /= rows[d];
  }
  nlohmann::json j = describe_numerics(m);
  j.update({{"d", m.d}, {"n", r.n}, {"scale", m.scale}, {"qn", r.qn}, {"kn", r.kn}, {"M", r.M},
            {"Vmax", r.vmax}, {"W", r.W}, {"dropout_factor", m.f}, {"logit_err", b.logit_err},
            {"softmax_rel", b.softmax_rel}, {"capped", b.capped}, {"golden_row_max", r.g_max},
            {"bound", b.bound}, {"typical_estimate", b.typical}, {"row", row}, {"row_index", index}});
  // Quantized: softmax_rel is the largest key's; the output averages them.
  if (m.kind == KernelNumerics::Kind::quantized) j["softmax_rel_mean"] = r.softmax_rel_mean;
  return j;
}

Model make_model(const Case& c, const CaseTensors& t, const Golden& g, const KernelNumerics& numerics, int64_t E) {
  Model m;
  m.kind = numerics.kind;
  m.fp = numerics.kind == KernelNumerics::Kind::exact ? KernelNumerics::naive(DType::f64).fp : numerics.fp;
  m.quant = numerics.quant;
  m.u_a = unit_roundoff(m.fp.accumulation);
  m.u_op = unit_roundoff(m.fp.operands);
  m.u_sc = unit_roundoff(m.fp.scores);
  m.u_p = unit_roundoff(m.fp.probabilities);
  m.d = static_cast<double>(E);
  m.signed_scale = c.effective_scale();
  m.scale = std::fabs(m.signed_scale);
  m.dropout = c.dropout_p > 0;
  m.f = m.dropout ? 1.0 / (1.0 - c.dropout_p) : 1.0;
  m.additive_mask = t.mask && t.mask->dtype != DType::b8;
  if (numerics.kind == KernelNumerics::Kind::quantized) {
    const QuantizedNumerics& qn = m.quant;
    const double floor = qn.step_floor;
    m.s_q = charged_step(qn.q, std::fmax(floor, t.q.max_abs() / qn.input_qmax));
    m.s_k = charged_step(qn.k, std::fmax(floor, t.k.max_abs() / qn.input_qmax));
    m.s_v = charged_step(qn.v, std::fmax(floor, t.v.max_abs() / qn.input_qmax));
    // Dropout widens the output f-fold.
    m.s_o = charged_step(qn.out, std::fmax(floor, m.f * t.v.max_abs() / qn.output_qmax));
    // Half a step, and 2^-15 of a step more: the kernel rounds x·(1/S) in
    // float before rounding it to the grid.
    m.e_q = element_error(qn, qn.q, m.s_q, t.q.data);
    m.e_k = element_error(qn, qn.k, m.s_k, t.k.data);
    m.e_v = element_error(qn, qn.v, m.s_v, t.v.data);
    // A golden g past the output's top, hi: a kernel value y below hi rounds
    // to within |y - g| + half a step of g, one above it clamps to hi, g - hi
    // from g. So the output adds the larger of the two (the bottom alike).
    m.e_o = element_error(qn, qn.out, m.s_o, g.out.data);
  }
  return m;
}

}  // namespace

ErrorBound error_bound(const Case& c, const CaseTensors& t, const Golden& g, DType dtype) {
  return error_bound(c, t, g, KernelNumerics::naive(dtype));
}

ErrorBound error_bound(const Case& c, const CaseTensors& t, const Golden& g,
                       const KernelNumerics& numerics) {
  if (numerics.kind == KernelNumerics::Kind::none)
    throw std::invalid_argument("no error model: the kernel set declares no numerics");
  AttentionCall call(c, t);
  const ConcreteSizes& s = call.sizes();
  const Model m = make_model(c, t, g, numerics, s.E);
  Shape rows = s.batch;
  rows.insert(rows.end(), {s.Hq, s.Lq});
  ErrorBound eb;
  eb.row_bound.resize(call.rows());
  eb.row_typical.resize(call.rows());
  // The oracle's facts where the golden carries them (float and exact
  // numerics read nothing else); otherwise each block's scores and weights.
  const auto* cached = dynamic_cast<const CallFacts*>(g.cache.get());
  if (cached && static_cast<int64_t>(cached->rows.size()) != call.rows()) cached = nullptr;
  const bool quantized = m.kind == KernelNumerics::Kind::quantized;
  const bool blocks = quantized || !cached;
  double worst = -1;
  int64_t worst_row = -1;
  RowInputs worst_inputs;
  RowBound worst_bound;
  MatrixD scores, low, q, k, v;
  std::vector<double> p(s.Lkv);
  KeyTerms keys;
  for (int64_t b = 0; b < call.batch(); ++b)
    for (int64_t h = 0; h < s.Hq; ++h) {
      KeyNorms norms;
      if (blocks) {
        call.scores_into(b, h, scores, &low);
        norms = key_norms(call, b, h);
      }
      if (quantized) q = call.query(b, h), k = call.key(b, h), v = call.value(b, h);
      for (int64_t i = 0; i < s.Lq; ++i) {
        const int64_t row = (b * s.Hq + h) * s.Lq + i;
        RowFacts own;
        if (blocks) {
          double max = 0;
          if (!softmax_row(scores.data() + i * s.Lkv, low.data() + i * s.Lkv, s.Lkv, p.data(), max))
            std::fill(p.begin(), p.end(), 0.0);
          own = row_facts(call, b, h, i, scores.data() + i * s.Lkv, p.data(), norms);
        }
        RowInputs r = row_inputs(blocks ? own : cached->rows[row], g.out.data.data() + row * s.Ev, s.Ev);
        if (quantized && r.finite && r.n > 0) add_quantized_terms(m, scores, q, k, v, p, i, r, keys);
        RowBound rb = row_bound(m, r);
        eb.row_bound[row] = rb.bound;
        eb.row_typical[row] = rb.typical;
        // The inputs printed are those of the largest finite bound (described once, at the end).
        double rank = std::isfinite(rb.bound) ? rb.bound : -0.5;
        if (rank > worst) {
          worst = rank;
          worst_row = row;
          worst_inputs = r;
          worst_bound = rb;
        }
      }
    }
  if (worst_row >= 0)
    eb.describe = [m, worst_inputs, worst_bound, worst_row, rows] {
      return describe(m, worst_inputs, worst_bound, worst_row, rows);
    };
  else
    eb.describe = [m] { return describe_numerics(m); };
  return eb;
}

}  // namespace sdpa
