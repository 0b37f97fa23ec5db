#pragma once
/// The reference model the harness uses: the Eigen and LibTorch oracles
/// run side by side and cross-checked, and the error model.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/check/reference.h"

namespace sdpa {

/// How far two goldens of one call differ.
struct OracleComparison {
  double max_rel_diff = 0.0;  // max |a - b| / scale over elements NaN in neither
  std::string disagreement;   // empty when they agree
};

/// Agreement means: the same fully_masked flags, NaN at the same positions,
/// and elsewhere |a - b| <= max(rel_tol * max(1e-300, scale), row_slack[row])
/// (an infinite difference never agrees). row_slack, one per query row, may
/// be empty.
OracleComparison compare_goldens(const Golden& eigen, const Golden& torch, double scale,
                                 const std::vector<double>& row_slack = {}, double rel_tol = 1e-12);

using OracleFn = std::function<Golden(const Case&, const CaseTensors&, const Assignment&)>;

class DualOracle : public ReferenceModel {
 public:
  /// The Eigen and LibTorch oracles; tests may pass others to cross-check.
  DualOracle();
  DualOracle(OracleFn eigen, OracleFn torch);

  std::string name() const override { return "eigen+libtorch"; }
  /// The Eigen golden, with `disagreement` and `oracle_max_rel_diff` from
  /// comparing it to the LibTorch golden relative to max(max |golden|, max |v|).
  /// Where they differ by more than 1e-12 of that, a row may still differ by
  /// its float64 error bound (error_model.h): LibTorch computes in float64.
  Golden golden(const Case& c, const CaseTensors& t, const Assignment& at) const override;
  /// The Eigen golden alone; cross_check() adds the LibTorch comparison.
  Golden unchecked_golden(const Case& c, const CaseTensors& t, const Assignment& at) const override;
  void cross_check(const Case& c, const CaseTensors& t, const Assignment& at, Golden& g) const override;
  using ReferenceModel::bound;
  ErrorBound bound(const Case& c, const CaseTensors& t, const Golden& g,
                   const KernelNumerics& numerics) const override;

 private:
  OracleFn eigen_, torch_;
};

std::unique_ptr<ReferenceModel> make_dual_oracle();

}  // namespace sdpa
