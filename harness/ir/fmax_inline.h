#pragma once
/// std::fmax without its call: glibc's fmax is an out-of-line libm function
/// on x86-64 (no -ffinite-math), which the oracle's per-element loops paid
/// for. The same result: a NaN operand gives the other operand.
namespace sdpa {

inline double fmax_inline(double a, double b) { return a < b || a != a ? b : a; }

}  // namespace sdpa
