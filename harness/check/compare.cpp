#include "harness/check/compare.h"

#include <cmath>
#include <optional>

namespace sdpa {
namespace {

// Non-finite values compare exactly: NaN matches NaN, an inf the inf of
// its sign; anything else against a non-finite value differs.
bool finite_differs(double a, double b) {
  if (std::isfinite(a) && std::isfinite(b)) return false;
  return !(a == b || (std::isnan(a) && std::isnan(b)));
}

// Fills shape_ok and nonfinite_rows; returns false when values cannot be
// compared. With a baseline (the original call run naively in the case
// dtype): where golden is an inf, a non-finite output equal to the
// baseline's is the dtype's range, not the kernel's doing (an f32 weight
// that underflows to 0 meets an inf of V: NaN, where the exact weight gives
// inf). Where golden is finite, only the dtype's own overflow is excused:
// a golden past the output dtype's largest value rounds to the inf of its
// sign (an f16 dropout that scales 65504 by 1 / 0.9), which is then the
// correctly rounded result.
bool structural(const Tensor& out, const Golden& g, Comparison& c, const Tensor* baseline = nullptr,
                std::optional<DType> dtype = std::nullopt) {
  if (out.shape != g.out.shape) {
    c.shape_ok = false;
    c.within = false;
    return false;
  }
  int64_t ev = out.shape.empty() ? 1 : out.shape.back();
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (!finite_differs(out.data[i], g.out.data[i])) continue;
    if (baseline && std::isinf(g.out.data[i]) && !std::isfinite(out.data[i]) &&
        !finite_differs(out.data[i], baseline->data[i]))
      continue;
    if (dtype && std::isinf(out.data[i]) && std::isfinite(g.out.data[i]) &&
        round_to(*dtype, g.out.data[i]) == out.data[i])
      continue;
    if (c.nonfinite_first < 0) c.nonfinite_first = i;
    if (c.nonfinite_rows.empty() || c.nonfinite_rows.back() != i / ev) c.nonfinite_rows.push_back(i / ev);
  }
  if (!c.nonfinite_rows.empty()) c.within = false;
  return true;
}

}  // namespace

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return idx;
}

Comparison compare_exact(const Tensor& out, const Golden& g, double value_scale, double rel) {
  Comparison c;
  if (!structural(out, g, c)) return c;
  double scale = std::max(g.out.max_abs(), value_scale);
  c.bound = rel * std::max(scale, 1e-300);
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (!std::isfinite(out.data[i]) || !std::isfinite(g.out.data[i])) continue;
    double e = std::fabs(out.data[i] - g.out.data[i]);
    if (e > c.max_abs || c.worst < 0) c.max_abs = e, c.worst = i;
  }
  if (c.max_abs > c.bound) c.within = false;
  return c;
}

Comparison compare_accuracy(const Tensor& cand, const Tensor& baseline, const Golden& g,
                            const ErrorBound& bound, DType dtype) {
  Comparison c;
  if (!structural(cand, g, c, baseline.shape == cand.shape ? &baseline : nullptr, dtype)) return c;
  // A baseline that overflowed where golden is finite says nothing about
  // the attainable error: the error model alone bounds the candidate then.
  double base_err = 0;
  bool baseline_broken = baseline.shape != g.out.shape;
  for (int64_t i = 0; !baseline_broken && i < g.out.numel(); ++i) {
    if (!std::isfinite(g.out.data[i])) continue;
    if (!std::isfinite(baseline.data[i])) baseline_broken = true;
    else base_err = std::max(base_err, std::fabs(baseline.data[i] - g.out.data[i]));
  }
  // The rows' bounds charge P @ V rounding against sum_j p_j |v_j|, which an
  // output that cancels still carries: the floor is back at |G| (NUMERICS.md),
  // taken per row, so a large row elsewhere lends a small row no slack.
  const int64_t ev = cand.shape.empty() ? 1 : cand.shape.back();
  std::vector<double> row_floor(static_cast<size_t>(ev ? cand.numel() / ev : 0), 0.0);
  for (int64_t i = 0; i < g.out.numel(); ++i)
    if (std::isfinite(g.out.data[i]))
      row_floor[i / ev] = std::max(row_floor[i / ev], std::fabs(g.out.data[i]));
  for (double& f : row_floor) f = 2.0 * ulp(dtype, f);
  double worst_excess = -1;
  for (int64_t i = 0; i < cand.numel(); ++i) {
    if (!std::isfinite(cand.data[i]) || !std::isfinite(g.out.data[i])) continue;
    double e = std::fabs(cand.data[i] - g.out.data[i]);
    size_t row = static_cast<size_t>(i / ev);
    const double floor = row_floor[row];
    const double relative_rule = baseline_broken ? INFINITY : 2.0 * base_err + floor;
    double model = row < bound.row_bound.size() ? bound.row_bound[row] + floor : floor;
    c.model_ratio = std::max(c.model_ratio, model > 0 ? e / model : (e > 0 ? INFINITY : 0));
    double typical = row < bound.row_typical.size() ? 2.0 * bound.row_typical[row] + floor : 0.0;
    double limit = std::min(std::max(relative_rule, typical), model);
    if (e > c.max_abs || c.worst < 0) c.max_abs = e;
    // Report the element that breaks its bound by the largest factor.
    double excess = limit > 0 ? e / limit : (e > 0 ? INFINITY : 0);
    if (excess > worst_excess) worst_excess = excess, c.worst = i, c.bound = limit;
  }
  c.ratio = std::max(worst_excess, 0.0);
  if (worst_excess > 1.0) c.within = false;
  return c;
}

}  // namespace sdpa
