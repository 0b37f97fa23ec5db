#pragma once
/// What the original call means (the golden output) and how far a kernel
/// may stray from it (the error model). The harness asks through this
/// interface; oracles/ implements it with an Eigen and a LibTorch oracle.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/case/case.h"
#include "harness/ir/tensor.h"
#include "harness/case/tensor_data.h"
#include "harness/check/numerics.h"

namespace sdpa {

/// What a reference model derived from the call while computing a golden
/// and reads again for its error bounds (oracles/: the Eigen oracle's
/// per-row facts). Opaque to the harness, which only carries it.
struct ReferenceCache {
  virtual ~ReferenceCache() = default;
};

struct Golden {
  Tensor out;  // f64, [batch..., Hq, Lq, Ev]
  /// One flag per query row of [batch..., Hq, Lq]: every key is dropped
  /// (bool false, -inf, or causal), so the row's output is 0.
  std::vector<uint8_t> fully_masked;
  /// One per query row: its largest score (q . k) * scale + mask over the
  /// keys it keeps, -inf when fully masked; empty when the oracle has none.
  /// A finding on a row names it: a kernel's max or exp is where large
  /// scores go wrong.
  std::vector<double> row_max_score;
  /// Empty when the oracles agree; otherwise what differs, with numbers.
  std::string disagreement;
  double oracle_max_rel_diff = 0.0;
  /// The model's own record of the call (shared by copies); may be null.
  std::shared_ptr<const ReferenceCache> cache;
  /// False while a model with a second oracle has not compared it yet
  /// (ReferenceModel::unchecked_golden): `disagreement` is then unknown.
  bool cross_checked = true;
};

/// An absolute bound on |kernel - golden| for each output row, and every
/// input it was derived from (printed with a failure).
struct ErrorBound {
  std::vector<double> row_bound;    // one per query row of [batch..., Hq, Lq]
  /// The error a correct kernel typically shows (sqrt(d), sqrt(n) growth
  /// instead of d, n), per row; never above row_bound.
  std::vector<double> row_typical;
  /// Every input of the largest row bound, as JSON: built when asked for (a
  /// finding or explain prints it), not with each bound.
  std::function<nlohmann::json()> describe;
  nlohmann::json inputs() const { return describe ? describe() : nlohmann::json(); }
  double max_bound() const;
};

class ReferenceModel {
 public:
  virtual ~ReferenceModel() = default;
  virtual std::string name() const = 0;
  /// The golden output at one runtime size, from the case and its tensors
  /// alone, cross-checked where the model has a second oracle.
  virtual Golden golden(const Case& c, const CaseTensors& t, const Assignment& at) const = 0;
  /// The same golden before that cross-check (cross_checked false), which
  /// cross_check() runs later; a model with one oracle has none to leave.
  virtual Golden unchecked_golden(const Case& c, const CaseTensors& t, const Assignment& at) const {
    return golden(c, t, at);
  }
  /// Compares `g` (from unchecked_golden for the same call) with the second
  /// oracle: fills g.disagreement and sets g.cross_checked.
  virtual void cross_check(const Case& c, const CaseTensors& t, const Assignment& at, Golden& g) const {
    g.cross_checked = true;
  }
  /// The error model for a kernel set computing as `numerics` declares
  /// (NUMERICS.md); finite for every kind but none.
  virtual ErrorBound bound(const Case& c, const CaseTensors& t, const Golden& g,
                           const KernelNumerics& numerics) const = 0;
  /// The bound of a naive kernel in `dtype` (KernelNumerics::naive).
  ErrorBound bound(const Case& c, const CaseTensors& t, const Golden& g, DType dtype) const {
    return bound(c, t, g, KernelNumerics::naive(dtype));
  }
};

}  // namespace sdpa
