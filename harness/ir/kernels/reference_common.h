#pragma once
/// Shared pieces of the reference kernels: rounding policy and iteration.
#include <array>
#include <cmath>
#include <vector>

#include "harness/ir/compensated_sum.h"
#include "harness/ir/exp_no_underflow.h"
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
  /// store() and op() of each of x[0..n), in place.
  void store_all(DType t, double* x, int64_t n) const {
    if (!exact()) round_all_to(t, x, n);
  }
  void op_all(DType t, double* x, int64_t n) const {
    if (exact()) return;
    round_all_to(accumulation_type(t), x, n);
    round_all_to(t, x, n);
  }
  /// A Python scalar as the op-math type of a t tensor sees it.
  double scalar(DType t, double s) const { return exact() ? s : round_to(accumulation_type(t), s); }

  /// sum_{i<n} term(i), accumulated in the precision of this set for dtype t.
  template <typename Term>
  double sum(DType t, int64_t n, Term term) const {
    if (exact()) {
      CompensatedSum acc;
      for (int64_t i = 0; i < n; ++i) acc.add(term(i));
      return acc.value();
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

  // Exact numerics take exp in double, as the Eigen oracle does: its 1-ulp
  // error is far inside the 1e-9 soundness tolerance.
  // Below -104 (float) exp rounds to 0: returned without libm's underflow
  // path, which sets errno for each such weight (exp_no_underflow in double).
  double exp(DType t, double x) const {
    if (exact() || accumulation_type(t) == DType::f64) return exp_no_underflow(x);
    return exp_f32(x);
  }
  static double exp_f32(double x) {
    const float f = static_cast<float>(x);
    return f < -104.0f ? 0.0f : std::exp(f);
  }
};

/// Calls f(index) for every multi-index of `shape`, in row-major order. A
/// template, not a std::function: it runs once per element.
template <typename F>
void for_each_index(const Shape& shape, F&& f) {
  std::vector<int64_t> idx(shape.size(), 0);
  const int64_t n = numel_of(shape);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(static_cast<const std::vector<int64_t>&>(idx));
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

/// Strides that read a tensor of `shape` broadcast to rank `rank`: 0 where a
/// dim is 1 or missing (NumPy broadcasting), the row-major stride elsewhere.
std::vector<int64_t> broadcast_strides(const Shape& shape, size_t rank);

/// Calls f(offsets) for every multi-index of `shape` in row-major order,
/// offsets[s] = sum_d index[d] * strides[s][d]: each source's offset kept
/// incrementally (a strided copy or broadcast reads no index vector).
template <size_t N, typename F>
void for_each_offsets(const Shape& shape, const std::array<std::vector<int64_t>, N>& strides, F&& f) {
  const int64_t n = numel_of(shape);
  std::array<int64_t, N> off{};
  if (n == 0) return;
  if (shape.empty()) {
    f(static_cast<const std::array<int64_t, N>&>(off));
    return;
  }
  const int64_t r = static_cast<int64_t>(shape.size()), inner = shape[r - 1];
  std::array<int64_t, N> step;
  for (size_t s = 0; s < N; ++s) step[s] = strides[s][r - 1];
  std::vector<int64_t> idx(r, 0);
  for (;;) {
    std::array<int64_t, N> at = off;
    for (int64_t j = 0; j < inner; ++j) {
      f(static_cast<const std::array<int64_t, N>&>(at));
      for (size_t s = 0; s < N; ++s) at[s] += step[s];
    }
    int64_t d = r - 2;
    for (; d >= 0; --d) {
      for (size_t s = 0; s < N; ++s) off[s] += strides[s][d];
      if (++idx[d] < shape[d]) break;
      for (size_t s = 0; s < N; ++s) off[s] -= idx[d] * strides[s][d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/// Normalizes a possibly negative dim against rank r; throws GraphError.
int64_t wrap_dim(int64_t d, int64_t r, const Node& node);

[[noreturn]] void refuse(const KernelArgs& a, const std::string& why);

void add_elementwise_kernels(KernelSet& k, Num n);
void add_shape_kernels(KernelSet& k, Num n);
void add_attention_kernels(KernelSet& k, Num n);

}  // namespace sdpa::ref
