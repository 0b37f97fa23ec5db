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

// x rounded to nearest, ties to even, onto a binary format of `precision`
// significand bits (the implicit one included) whose normal numbers run
// from 2^emin to its largest binade 2^emax: gradual underflow below,
// overflow to inf above max_finite, the sign kept (a negative value that
// rounds to zero gives -0, as a hardware conversion does). Adding and
// subtracting 1.5 quanta * 2^52 rounds to a multiple of the quantum in the
// default (nearest-even) mode with two exact double operations; IEEE
// arithmetic (no -ffast-math) keeps both (dtype_test checks ties).
template <int precision, int emin, int emax>
[[gnu::always_inline]] inline double round_binary(double x, double max_finite) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const int e = static_cast<int>((bits >> 52) & 0x7ff) - 1023;  // |x| in [2^e, 2^(e+1))
  if (e == 1024 || x == 0.0) return x;                           // inf, NaN, zero
  // Past the largest binade every value overflows; the quantum's exponent
  // below then stays inside double's range (2^979 once gave inf - inf).
  if (e > emax) return std::copysign(INFINITY, x);
  const int lead = std::max(e, emin);
  const uint64_t quantum = static_cast<uint64_t>(lead - (precision - 1) + 52 + 1023) << 52;
  double shifter;
  std::memcpy(&shifter, &quantum, sizeof shifter);
  shifter *= 1.5;
  const double r = std::copysign((x + shifter) - shifter, x);
  return std::fabs(r) > max_finite ? std::copysign(INFINITY, x) : r;
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
    case DType::f16: return round_binary<11, -14, 15>(x, 65504.0);
    case DType::bf16: return round_binary<8, -126, 127>(x, 0x1.fep127);
    case DType::i8: return saturate(x, -128, 127);
    case DType::i32: return saturate(x, -2147483648.0, 2147483647.0);
    case DType::i64: return saturate(x, -9.2233720368547758e18, 9.2233720368547758e18);
    case DType::b8: return x != 0.0 ? 1.0 : 0.0;
  }
  return x;
}

void round_all_to(DType t, double* x, int64_t n) {
  switch (t) {
    case DType::f64: return;
    case DType::f32:
      for (int64_t i = 0; i < n; ++i) x[i] = static_cast<double>(static_cast<float>(x[i]));
      return;
    case DType::f16:
      for (int64_t i = 0; i < n; ++i) x[i] = round_binary<11, -14, 15>(x[i], 65504.0);
      return;
    case DType::bf16:
      for (int64_t i = 0; i < n; ++i) x[i] = round_binary<8, -126, 127>(x[i], 0x1.fep127);
      return;
    default:
      for (int64_t i = 0; i < n; ++i) x[i] = round_to_other(t, x[i]);
  }
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
