#pragma once
/// Output comparisons behind the soundness and accuracy checks (NUMERICS.md).
#include <string>
#include <vector>

#include "harness/check/reference.h"
#include "harness/ir/tensor.h"

namespace sdpa {

struct Comparison {
  bool shape_ok = true;
  /// Query rows where an element differs from golden in finiteness: a
  /// number against NaN or inf, NaN against inf, or infs of opposite sign
  /// (NaN matches NaN, an inf the inf of its sign).
  std::vector<int64_t> nonfinite_rows;
  int64_t nonfinite_first = -1;         // flat index of the first such element
  double max_abs = 0.0;                 // over elements finite in both
  int64_t worst = -1;                   // flat index of max_abs
  double bound = 0.0;                   // the bound at `worst` (or the tightest broken one)
  bool within = true;                   // every element within its bound
  double ratio = 0.0;                   // accuracy: the largest |C - G| / bound over elements
  double model_ratio = 0.0;             // accuracy: the largest |C - G| / (error model + floor)
};

/// The exact run against golden: |out - g| <= rel * max(max|g|, max|v|).
Comparison compare_exact(const Tensor& out, const Golden& g, double value_scale, double rel = 1e-9);

/// A target kernel C against golden G with baseline B (NUMERICS.md): every
/// element within 2 * max(maxabs(B - G), typical error of its row) + floor
/// and within the error model's bound for its row. The typical error keeps
/// ill-conditioned rows (huge logits), where two correct kernels differ by
/// rounding luck alone, from failing a kernel that happened to round worse
/// than the baseline. The floor is 2 ulps of the output dtype at the row's
/// max|G|: the error model charges the rounding an output that cancels to
/// near 0 still carries (u * sum_j p_j |v_j|) in its row bound.
/// A baseline that is non-finite where golden is finite drops the first rule.
Comparison compare_accuracy(const Tensor& c, const Tensor& baseline, const Golden& g,
                            const ErrorBound& bound, DType dtype);

/// Multi-index of a flat index into `shape`.
std::vector<int64_t> unravel(int64_t flat, const Shape& shape);

}  // namespace sdpa
