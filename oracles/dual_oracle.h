#pragma once
/// The reference model the harness uses: the Eigen and LibTorch oracles
/// run side by side and cross-checked, and the error model.
#include <functional>
#include <memory>

#include "harness/reference.h"

namespace sdpa {

/// How far two goldens of one call differ.
struct OracleComparison {
  double max_rel_diff = 0.0;  // max |a - b| / scale over elements that are numbers in both
  std::string disagreement;   // empty when they agree
};

/// Agreement means: NaN at the same positions, the same fully_masked flags,
/// and |a - b| <= rel_tol * max(1e-300, scale) everywhere else.
OracleComparison compare_goldens(const Golden& eigen, const Golden& torch, double scale,
                                 double rel_tol = 1e-12);

using OracleFn = std::function<Golden(const Case&, const CaseTensors&, const Assignment&)>;

class DualOracle : public ReferenceModel {
 public:
  /// The Eigen and LibTorch oracles; tests may pass others to cross-check.
  DualOracle();
  DualOracle(OracleFn eigen, OracleFn torch);

  std::string name() const override { return "eigen+libtorch"; }
  /// The Eigen golden, with `disagreement` and `oracle_max_rel_diff` from
  /// comparing it to the LibTorch golden relative to max(max |golden|, max |v|).
  Golden golden(const Case& c, const CaseTensors& t, const Assignment& at) const override;
  ErrorBound bound(const Case& c, const CaseTensors& t, const Golden& g,
                   DType dtype) const override;

 private:
  OracleFn eigen_, torch_;
};

std::unique_ptr<ReferenceModel> make_dual_oracle();

}  // namespace sdpa
