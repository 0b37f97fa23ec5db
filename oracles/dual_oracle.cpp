#include "oracles/dual_oracle.h"

#include <cmath>
#include <sstream>

#include "harness/ir/fmax_inline.h"
#include "oracles/eigen_oracle.h"
#include "oracles/error_model.h"
#include "oracles/torch_oracle.h"

namespace sdpa {
namespace {

std::string index_str(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return shape_str(index);
}

std::string number(double x) {
  std::ostringstream o;
  o.precision(17);
  o << x;
  return o.str();
}

}  // namespace

OracleComparison compare_goldens(const Golden& eigen, const Golden& torch, double scale,
                                 const std::vector<double>& row_slack, double rel_tol) {
  OracleComparison r;
  const Tensor &a = eigen.out, &b = torch.out;
  if (a.shape != b.shape) {
    r.disagreement = "oracle outputs differ in shape: eigen " + shape_str(a.shape) + ", libtorch " +
                     shape_str(b.shape);
    return r;
  }
  const Shape rows(a.shape.begin(), a.shape.end() - 1);
  if (eigen.fully_masked != torch.fully_masked) {
    size_t row = 0;
    while (row < eigen.fully_masked.size() && row < torch.fully_masked.size() &&
           eigen.fully_masked[row] == torch.fully_masked[row])
      ++row;
    r.disagreement = "oracles differ on fully masked rows, first at row " +
                     index_str(static_cast<int64_t>(row), rows);
    return r;
  }
  const double denom = std::fmax(1e-300, scale);
  int64_t nan_at = -1, worst = -1;
  double worst_excess = 1.0;  // |a - b| / tolerance
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data[i], y = b.data[i];
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y) && nan_at < 0) nan_at = i;
      continue;
    }
    const double diff = x == y ? 0.0 : std::fabs(x - y);  // inf against anything else: inf
    r.max_rel_diff = fmax_inline(r.max_rel_diff, diff / denom);
    const size_t row = static_cast<size_t>(i / a.shape.back());
    double tolerance = rel_tol * denom;
    if (row < row_slack.size() && std::isfinite(diff))
      tolerance = std::fmax(tolerance, row_slack[row]);
    if (diff / tolerance > worst_excess) worst_excess = diff / tolerance, worst = i;
  }
  auto values = [&](int64_t i) {
    return " at out" + index_str(i, a.shape) + ": eigen " + number(a.data[i]) + ", libtorch " +
           number(b.data[i]);
  };
  if (nan_at >= 0)
    r.disagreement = "oracles differ in NaN positions, first" + values(nan_at);
  else if (worst >= 0)
    r.disagreement = "oracles differ by " + number(worst_excess) + " times the tolerance (" +
                     number(rel_tol) + " relative to " + number(scale) +
                     (row_slack.empty() ? "" : ", or the row's float64 error bound") + ")" +
                     values(worst);
  return r;
}

DualOracle::DualOracle() : DualOracle(eigen_golden, torch_golden) {}
DualOracle::DualOracle(OracleFn eigen, OracleFn torch)
    : eigen_(std::move(eigen)), torch_(std::move(torch)) {}

Golden DualOracle::golden(const Case& c, const CaseTensors& t, const Assignment& at) const {
  Golden g = unchecked_golden(c, t, at);
  cross_check(c, t, at, g);
  return g;
}

Golden DualOracle::unchecked_golden(const Case& c, const CaseTensors& t, const Assignment& at) const {
  Golden g = eigen_(c, t, at);
  g.cross_checked = false;
  return g;
}

void DualOracle::cross_check(const Case& c, const CaseTensors& t, const Assignment& at, Golden& g) const {
  const Golden torch = torch_(c, t, at);
  const double scale = std::fmax(g.out.max_abs(), t.v.max_abs());
  OracleComparison cmp = compare_goldens(g, torch, scale);
  // Float64 loses up to u * |s| per logit, past 1e-12 with large logits or
  // additive masks such as -65504: allow the LibTorch oracle its error bound.
  if (!cmp.disagreement.empty())
    cmp = compare_goldens(g, torch, scale, error_bound(c, t, g, DType::f64).row_bound);
  g.disagreement = cmp.disagreement;
  g.oracle_max_rel_diff = cmp.max_rel_diff;
  g.cross_checked = true;
}

ErrorBound DualOracle::bound(const Case& c, const CaseTensors& t, const Golden& g,
                             const KernelNumerics& numerics) const {
  return error_bound(c, t, g, numerics);
}

std::unique_ptr<ReferenceModel> make_dual_oracle() { return std::make_unique<DualOracle>(); }

}  // namespace sdpa
