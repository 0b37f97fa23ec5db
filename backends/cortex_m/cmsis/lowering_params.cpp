// Models AtenToCortexMPass's parameter computations (quantize_multiplier_aot,
// _compute_softmax_params, the bmm/mul substitutions) and the runtime's
// validate_single_quant_params, semantics/cortex-m-and-xnnpack.md §1.7.
#include "backends/cortex_m/cmsis/lowering_params.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "backends/cortex_m/cmsis/cmsis_error.h"

namespace sdpa::cortex_m::cmsis {

QuantMultiplier quantize_multiplier_aot(double x) {
  if (!std::isfinite(x))
    throw CmsisCheckFailed(
        {"quantize_multiplier_aot", "x", std::to_string(x) + ": int(round(m·2^31)) raises in Python"});
  if (x == 0.0) return {0, 0};
  int e = 0;
  const double m = std::frexp(x, &e);  // m in [0.5, 1) (or (-1, -0.5]), exact
  // m·2^31 is exact; std::nearbyint in the default rounding mode ties to even, like Python's round.
  double q = std::nearbyint(std::ldexp(m, 31));
  if (q == 2147483648.0) {
    q = 1073741824.0;
    ++e;
  }
  q = std::fmin(std::fmax(q, -2147483648.0), 2147483647.0);
  return {static_cast<int32_t>(q), static_cast<int32_t>(e)};
}

void validate_single_quant_params(int64_t multiplier, int64_t shift, const std::string& param_name) {
  if (multiplier < std::numeric_limits<int32_t>::min() || multiplier > std::numeric_limits<int32_t>::max())
    throw CmsisCheckFailed({"validate_single_quant_params", "multiplier",
                            param_name + " multiplier must be in int32 range [Value: " + std::to_string(multiplier) + "]"});
  if (shift < -31 || shift > 31)
    throw CmsisCheckFailed({"validate_single_quant_params", "shift",
                            param_name + " shift must be in range [-31, 31] [Value: " + std::to_string(shift) + "]"});
}

SoftmaxParams softmax_params(double input_scale) {
  constexpr int kInputIntegerBits = 5;
  // Python's min(S_in·2^26, 2^31 - 1): a NaN scale passes through (and qm raises).
  const double scaled = input_scale * std::ldexp(1.0, 31 - kInputIntegerBits);
  const double real = 2147483647.0 < scaled ? 2147483647.0 : scaled;
  const QuantMultiplier qm = quantize_multiplier_aot(real);
  // 31·2^26 / 2^shift is exact in double; floor, then negate.
  const double radius = std::floor(std::ldexp(31.0, 26 - qm.shift));
  const int64_t diff_min =
      radius >= 9223372036854775808.0 ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(radius);
  return {qm.multiplier, qm.shift, diff_min};
}

void check_softmax_output_qparams(const QParams& out) {
  if (!(std::fabs(out.scale - 1.0 / 256) <= 1e-12))
    throw CmsisCheckFailed({"_compute_softmax_params", "output scale", std::to_string(out.scale) + " is not 1/256"});
  if (out.zero_point != -128)
    throw CmsisCheckFailed(
        {"_compute_softmax_params", "output zero_point", std::to_string(out.zero_point) + " is not -128"});
}

namespace {

// An int8 zero point, so that its negation is an int32 offset.
void check_int8_zero_point(const QParams& q, const char* what) {
  if (q.zero_point < -128 || q.zero_point > 127)
    throw std::invalid_argument(std::string(what) + " zero point " + std::to_string(q.zero_point) + " is not int8");
}

}  // namespace

BatchMatmulParams batch_matmul_params(const QParams& lhs, const QParams& rhs, const QParams& out) {
  check_int8_zero_point(lhs, "lhs");
  check_int8_zero_point(rhs, "rhs");
  check_int8_zero_point(out, "output");
  const QuantMultiplier qm = quantize_multiplier_aot(lhs.scale * rhs.scale / out.scale);
  BatchMatmulParams p;
  p.input_offset = -lhs.zero_point;
  p.filter_offset = -rhs.zero_point;
  p.output_offset = out.zero_point;
  p.multiplier = qm.multiplier;
  p.shift = qm.shift;
  return p;
}

FullyConnectedParams fully_connected_params(const QParams& in, double weight_scale, const QParams& out) {
  check_int8_zero_point(in, "input");
  check_int8_zero_point(out, "output");
  const QuantMultiplier qm = quantize_multiplier_aot(in.scale * weight_scale / out.scale);
  FullyConnectedParams p;
  p.input_offset = -in.zero_point;
  p.output_offset = out.zero_point;
  p.multiplier = qm.multiplier;
  p.shift = qm.shift;
  return p;
}

ElementwiseMulParams elementwise_mul_params(const QParams& a, const QParams& b, const QParams& out) {
  check_int8_zero_point(a, "input_1");
  check_int8_zero_point(b, "input_2");
  check_int8_zero_point(out, "output");
  const QuantMultiplier qm = quantize_multiplier_aot(a.scale * b.scale / out.scale);
  ElementwiseMulParams p;
  p.input_1_offset = -a.zero_point;
  p.input_2_offset = -b.zero_point;
  p.output_offset = out.zero_point;
  p.multiplier = qm.multiplier;
  p.shift = qm.shift;
  return p;
}

}  // namespace sdpa::cortex_m::cmsis
