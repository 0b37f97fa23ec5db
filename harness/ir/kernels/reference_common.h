#pragma once
/// Shared pieces of the reference kernels: rounding policy and iteration.
#include <cmath>
#include <functional>

#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::ref {

/// Rounding and accumulation policy of one kernel set.
struct Num {
  Numerics mode;
  bool exact() const { return mode == Numerics::exact; }
  /// A finished result stored as dtype t.
  double store(DType t, double x) const { return exact() ? x : round_to(t, x); }
  /// An elementwise result computed in t's op-math type, then stored as t.
  double op(DType t, double x) const {
    return exact() ? x : round_to(t, round_to(accumulation_type(t), x));
  }
  /// A Python scalar as the op-math type of a t tensor sees it.
  double scalar(DType t, double s) const { return exact() ? s : round_to(accumulation_type(t), s); }

  /// sum_{i<n} term(i), accumulated in the precision of this set for dtype t.
  template <typename Term>
  double sum(DType t, int64_t n, Term term) const {
    if (exact()) {
      long double acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += static_cast<long double>(term(i));
      return static_cast<double>(acc);
    }
    if (accumulation_type(t) == DType::f64) {
      double acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += term(i);
      return acc;
    }
    float acc = 0;
    for (int64_t i = 0; i < n; ++i) acc += static_cast<float>(term(i));
    return acc;
  }

  /// Product of two stored values as the accumulation type computes it.
  double mul(DType t, double a, double b) const {
    if (exact() || accumulation_type(t) == DType::f64) return a * b;
    return static_cast<double>(static_cast<float>(a) * static_cast<float>(b));
  }

  // Exact numerics take exp in double: its 1-ulp error is far inside the
  // 1e-9 soundness tolerance, and long double exp costs several times more.
  double exp(DType t, double x) const {
    if (exact() || accumulation_type(t) == DType::f64) return std::exp(x);
    return std::exp(static_cast<float>(x));
  }
};

/// Calls f(index) for every multi-index of `shape`, in row-major order.
void for_each_index(const Shape& shape, const std::function<void(const std::vector<int64_t>&)>& f);

/// Normalizes a possibly negative dim against rank r; throws GraphError.
int64_t wrap_dim(int64_t d, int64_t r, const Node& node);

[[noreturn]] void refuse(const KernelArgs& a, const std::string& why);

void add_elementwise_kernels(KernelSet& k, Num n);
void add_shape_kernels(KernelSet& k, Num n);
void add_attention_kernels(KernelSet& k, Num n);

}  // namespace sdpa::ref
