#include "harness/ir/dtype.h"

#include <cfloat>
#include <cstring>
#include <cmath>
#include <limits>

namespace sdpa {
namespace {

struct FloatFormat {
  int precision;  // significand bits including the implicit one
  int emin;       // exponent of the smallest normal number
  double max_finite;
};

FloatFormat format_of(DType t) {
  switch (t) {
    case DType::f16: return {11, -14, 65504.0};
    case DType::bf16: return {8, -126, 3.38953138925153547590470800371487866880e38};
    case DType::f32: return {24, -126, FLT_MAX};
    default: return {53, -1022, DBL_MAX};
  }
}

double power_of_two(int e) {
  uint64_t bits = static_cast<uint64_t>(e + 1023) << 52;
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// Round-to-nearest-even onto a binary format with `precision` bits, gradual
// underflow below 2^emin and overflow to infinity. Adding and subtracting
// 1.5 * 2^52 quanta rounds to a multiple of the quantum in the current
// (nearest-even) mode with two exact double operations.
double round_binary(double x, const FloatFormat& f) {
  if (!std::isfinite(x) || x == 0.0) return x;
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int e = static_cast<int>((bits >> 52) & 0x7ff) - 1023;  // |x| in [2^e, 2^(e+1))
  int lead = std::max(e, f.emin);
  double shifter = 1.5 * power_of_two(lead - (f.precision - 1) + 52);
  // IEEE arithmetic (no -ffast-math) keeps the two roundings: (x + s) - s
  // is not x, and the compiler may not fold it (dtype_test checks ties).
  const double r = (x + shifter) - shifter;
  if (std::fabs(r) > f.max_finite) return std::copysign(INFINITY, x);
  return r;
}

double saturate(double x, double lo, double hi) {
  if (std::isnan(x)) return 0.0;
  return std::fmin(std::fmax(std::nearbyint(x), lo), hi);
}

}  // namespace

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f64: return "f64";
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i8: return "int8";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::b8: return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(const std::string& name) {
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i8, DType::i32,
                  DType::i64, DType::b8})
    if (name == dtype_name(t)) return t;
  return std::nullopt;
}

bool is_floating(DType t) {
  return t == DType::f64 || t == DType::f32 || t == DType::f16 || t == DType::bf16;
}

bool is_integral(DType t) { return t == DType::i8 || t == DType::i32 || t == DType::i64; }

double round_to_other(DType t, double x) {
  switch (t) {
    case DType::f64: return x;
    case DType::f32: return static_cast<double>(static_cast<float>(x));
    case DType::f16:
    case DType::bf16: return round_binary(x, format_of(t));
    case DType::i8: return saturate(x, -128, 127);
    case DType::i32: return saturate(x, -2147483648.0, 2147483647.0);
    case DType::i64: return saturate(x, -9.2233720368547758e18, 9.2233720368547758e18);
    case DType::b8: return x != 0.0 ? 1.0 : 0.0;
  }
  return x;
}

double unit_roundoff(DType t) {
  if (!is_floating(t)) return 0.0;
  return std::ldexp(1.0, -format_of(t).precision);
}

double ulp(DType t, double x) {
  if (!is_floating(t)) return 1.0;
  FloatFormat f = format_of(t);
  double a = std::fabs(x);
  int e = 0;
  if (a > 0 && std::isfinite(a)) std::frexp(a, &e);
  int lead = std::max(e - 1, f.emin);
  if (a == 0 || !std::isfinite(a)) lead = f.emin;
  return std::ldexp(1.0, lead - (f.precision - 1));
}

double lowest(DType t) {
  switch (t) {
    case DType::i8: return -128;
    case DType::i32: return -2147483648.0;
    case DType::i64: return -9.2233720368547758e18;
    case DType::b8: return 0;
    default: return -format_of(t).max_finite;
  }
}

}  // namespace sdpa
