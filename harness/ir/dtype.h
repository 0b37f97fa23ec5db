#pragma once
/// Element types of tensors in a case or a graph, and exact rounding to them.
#include <cstdint>
#include <optional>
#include <string>

namespace sdpa {

enum class DType { f64, f32, f16, bf16, i8, i32, i64, b8 };

/// Short name used in corpus files and printed graphs: "f32", "bf16", "bool".
const char* dtype_name(DType t);
std::optional<DType> parse_dtype(const std::string& name);

bool is_floating(DType t);
bool is_integral(DType t);  // i8, i32, i64 (not bool)

/// Rounds x to the nearest value of type t (ties to even, IEEE overflow to
/// inf for floats, saturation for integers, != 0 for bool). f64 is identity.
/// Inline for f64 and f32 (a hardware conversion): kernels call it per element.
double round_to_other(DType t, double x);
inline double round_to(DType t, double x) {
  if (t == DType::f64) return x;
  if (t == DType::f32) return static_cast<double>(static_cast<float>(x));
  return round_to_other(t, x);
}

/// round_to(t, x[i]) for each i < n, the type chosen once for the row:
/// rows of 16-bit floats are rounded without a call per element.
void round_all_to(DType t, double* x, int64_t n);

/// Unit roundoff u = 2^-p of a floating type (f32: 2^-24, bf16: 2^-8).
double unit_roundoff(DType t);

/// Distance from |x| to the next representable value of t away from zero
/// (the unit in the last place at x); for integers 1.
double ulp(DType t, double x);

/// The lowest finite value of t (used for the mask fill "min").
double lowest(DType t);

/// The type a naive kernel accumulates in for inputs of type t: f32 for the
/// 16-bit floats (as ATen's CPU kernels do), t otherwise.
inline DType accumulation_type(DType t) {
  if (t == DType::f16 || t == DType::bf16) return DType::f32;
  if (t == DType::i8) return DType::i32;
  return t;
}

}  // namespace sdpa
