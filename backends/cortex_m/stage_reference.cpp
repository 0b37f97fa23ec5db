// Fake-quantized and AOT-reference twins of the cortex_m int8 stages, as
// ExecuTorch's Cortex-M op tests compare them (cortex-m-and-xnnpack.md §1.7, §5.20).
#include "backends/cortex_m/stage_reference.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <vector>

#include "backends/cortex_m/cortex_m_ops.h"
#include "backends/cortex_m/softmax_s8_reference.h"

namespace sdpa::cortex_m {
namespace {

using i128 = __int128;

int64_t clamp8(long double v) { return static_cast<int64_t>(std::clamp<long double>(v, -128, 127)); }

// Round half to even, as nearbyint in the default mode (the harness never
// changes it): rint gives the same value without saving and restoring the
// floating-point environment, which for long double costs more than the
// rest of a stage's check.
long double round_even(long double v) { return std::rint(v); }

const Tensor& arg_value(const Graph& g, const Execution& run, const Node& n, size_t i) {
  const ValueRef v = std::get<ValueRef>(n.args.at(i));
  (void)g;
  return run.values.at(v.node).at(v.output);
}

// "stage %name (op): output[i, j]" for the element at `flat`.
std::string stage_element(const Node& n, const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1, rest = flat; d >= 0; --d) {
    idx[d] = rest % shape[d];
    rest /= shape[d];
  }
  return "stage %" + n.name + " (" + n.op + "): output" + shape_str(idx);
}

StageBreach breach(const Node& n, std::string detail, bool in_kernel) {
  return {"%" + n.name + " (" + n.op + ")", std::move(detail), in_kernel};
}

StageBreach element(const Node& n, const Shape& shape, int64_t flat, const std::string& what, int64_t got,
                    int64_t want, bool in_kernel) {
  return breach(n, stage_element(n, shape, flat) + " = " + std::to_string(got) + ", " + what + " " + std::to_string(want),
                in_kernel);
}

std::string real_str(long double x) {
  std::ostringstream o;
  o << std::setprecision(9) << static_cast<double>(x);
  return o.str();
}

// One requantized stage: out[i] from its exact integer accumulator acc[i].
// The kernel against its own multiplier and shift (the AOT reference): a
// code off it is the kernel's. The AOT code against the real scale ratio's
// (the fake-quantized twin): a code off that is the lowering's multiplier
// or shift, whatever the kernel computed.
void requantized(const Node& n, const Tensor& out, const std::vector<int64_t>& acc, long double real_multiplier,
                 StageBreaches& b) {
  const int64_t zo = std::get<int64_t>(n.args.at(4)), m = std::get<int64_t>(n.args.at(5)),
                s = std::get<int64_t>(n.args.at(6));
  for (size_t i = 0; i < acc.size() && !b.full(); ++i) {
    const int64_t got = static_cast<int64_t>(out.data[i]);
    const int64_t aot = clamp8(static_cast<long double>(requantize_cmsis(acc[i], m, s) + zo));
    if (!b.kernel && got != aot)
      b.kernel = element(n, out.shape, static_cast<int64_t>(i), "the AOT reference requantize_cmsis gives", got, aot, true);
    const int64_t fake = clamp8(round_even(acc[i] * real_multiplier) + zo);
    if (!b.lowering && std::llabs(aot - fake) > 1)
      b.lowering = breach(n,
                          stage_element(n, out.shape, static_cast<int64_t>(i)) + ": the lowering's multiplier " +
                              std::to_string(m) + " and shift " + std::to_string(s) + " give " + std::to_string(aot) +
                              " (requantize_cmsis), more than 1 LSB from its fake-quantized twin " +
                              std::to_string(fake) + " (scale ratio " + real_str(real_multiplier) + ")",
                          false);
  }
}

double kwarg(const Node& n, const std::string& key) { return std::get<double>(*n.kwarg(key)); }

void bmm_stage(const Graph& g, const Execution& run, const Node& n, const Tensor& out, StageBreaches& found) {
  const Tensor &l = arg_value(g, run, n, 0), &r = arg_value(g, run, n, 2);
  const int64_t lo = std::get<int64_t>(n.args[1]), ro = std::get<int64_t>(n.args[3]);
  const int64_t B = l.shape[0], M = l.shape[1], N = r.shape[1], K = l.shape[2];
  std::vector<int64_t> acc(B * M * N, 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        for (int64_t k = 0; k < K; ++k)
          acc[(b * M + i) * N + j] += (static_cast<int64_t>(l.data[(b * M + i) * K + k]) + lo) *
                                      (static_cast<int64_t>(r.data[(b * N + j) * K + k]) + ro);
  requantized(n, out, acc,
              static_cast<long double>(kwarg(n, "lhs_scale")) * kwarg(n, "rhs_scale") / kwarg(n, "output_scale"), found);
}

void mul_stage(const Graph& g, const Execution& run, const Node& n, const Tensor& out, StageBreaches& found) {
  const Tensor &a = arg_value(g, run, n, 0), &b = arg_value(g, run, n, 2);
  const int64_t za = std::get<int64_t>(n.args[1]), zb = std::get<int64_t>(n.args[3]);
  std::vector<int64_t> acc(a.numel());
  for (int64_t i = 0; i < a.numel(); ++i)
    acc[i] = (static_cast<int64_t>(a.data[i]) - za) * (static_cast<int64_t>(b.data[b.numel() == 1 ? 0 : i]) - zb);
  requantized(n, out, acc,
              static_cast<long double>(kwarg(n, "a_scale")) * kwarg(n, "b_scale") / kwarg(n, "output_scale"), found);
}

// quantized_linear: the int32 accumulator Σ_k (x - zp_in)·w + bias of each
// output, requantized by S_in·S_w/S_o (its input offset at arg 3; output
// zero point, multiplier and shift at args 4 to 6, as bmm's and mul's).
void linear_stage(const Graph& g, const Execution& run, const Node& n, const Tensor& out, StageBreaches& found) {
  const Tensor &x = arg_value(g, run, n, 0), &w = arg_value(g, run, n, 1);
  const Tensor* b = std::holds_alternative<ValueRef>(n.args.at(2)) ? &arg_value(g, run, n, 2) : nullptr;
  const int64_t io = std::get<int64_t>(n.args.at(3));
  const int64_t K = w.shape[1], N = w.shape[0], rows = x.numel() / std::max<int64_t>(K, 1);
  const long double real = static_cast<long double>(kwarg(n, "input_scale")) * kwarg(n, "weight_scale") /
                           kwarg(n, "output_scale");
  std::vector<int64_t> acc(static_cast<size_t>(rows * N));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < N; ++o) {
      int64_t a = b ? static_cast<int64_t>(b->data[o]) : 0;
      for (int64_t k = 0; k < K; ++k)
        a += (static_cast<int64_t>(x.data[r * K + k]) + io) * static_cast<int64_t>(w.data[o * K + k]);
      acc[r * N + o] = a;
    }
  requantized(n, out, acc, real, found);
}

void softmax_stage(const Graph& g, const Execution& run, const Node& n, const Tensor& out, StageBreaches& found) {
  const Tensor& x = arg_value(g, run, n, 0);
  const long double s = kwarg(n, "input_scale");
  const int64_t row = x.shape.back();
  std::vector<long double> e(static_cast<size_t>(row));  // a row's exps
  // The int8 codes' differences from their row max are the integers -255..0:
  // exp((x - max)·s) of each, computed once for the stage.
  std::vector<long double> exp_of(256);
  std::vector<bool> known(256, false);
  auto exp_at = [&](long double d) {
    const long double x_s = d * s;
    const bool code = d <= 0 && d >= -255 && d == static_cast<long double>(static_cast<int>(d));
    if (!code) return std::exp(x_s);  // not a difference of int8 codes: computed
    const auto i = static_cast<size_t>(-static_cast<int>(d));
    if (!known[i]) exp_of[i] = std::exp(x_s), known[i] = true;
    return exp_of[i];
  };
  // cortex_m.softmax(x, dim, input_zp, output_zp, mult, shift, diff_min) as the lowering writes it.
  const bool lowered = n.args.size() > 6;
  std::vector<int64_t> codes(static_cast<size_t>(row)), want;
  for (int64_t r0 = 0; row > 0 && r0 + row <= x.numel() && !found.full(); r0 += row) {
    // The integer reference, to the bit: a 1 LSB rounding slip stays inside
    // the twin's 2 LSB, and a code off it is the kernel's.
    if (lowered) {
      for (int64_t j = 0; j < row; ++j) codes[j] = static_cast<int64_t>(x.data[r0 + j]);
      want = softmax_s8_reference(codes, std::get<int64_t>(n.args[4]), std::get<int64_t>(n.args[5]),
                                  std::get<int64_t>(n.args[6]));
      for (int64_t j = 0; j < row && !found.kernel; ++j)
        if (static_cast<int64_t>(out.data[r0 + j]) != want[j])
          found.kernel = element(n, out.shape, r0 + j, "the integer reference arm_softmax_s8 (§2.2) gives",
                             static_cast<int64_t>(out.data[r0 + j]), want[j], true);
    }
    // The twin, against the reference's codes where the lowering wrote the
    // kernel's multiplier, shift and diff_min (a code off it is theirs),
    // else against the kernel's own.
    long double mx = -std::numeric_limits<long double>::infinity(), total = 0;
    for (int64_t j = 0; j < row; ++j) mx = std::fmax(mx, x.data[r0 + j]);
    for (int64_t j = 0; j < row; ++j) total += e[j] = exp_at(x.data[r0 + j] - mx);
    std::optional<StageBreach>& slot = lowered ? found.lowering : found.kernel;
    for (int64_t j = 0; j < row && !slot; ++j) {
      const int64_t fake = clamp8(round_even(256 * e[j] / total) - 128);
      const int64_t code = lowered ? want[j] : static_cast<int64_t>(out.data[r0 + j]);
      if (std::llabs(code - fake) <= 2) continue;
      slot = lowered ? breach(n,
                              stage_element(n, out.shape, r0 + j) + ": the lowering's multiplier, shift and diff_min give " +
                                  std::to_string(code) + " (the integer reference), more than 2 LSB from its fake-quantized twin " +
                                  std::to_string(fake),
                              false)
                     : element(n, out.shape, r0 + j, "more than 2 LSB from its fake-quantized twin", code, fake, true);
    }
  }
}

// quantize_per_tensor (§1.7): each code a correct rounding of zp + x / S,
// clamped, up to the float rounding of 1.0f / S and of the product (either
// side of a tie passes: the scalar path rounds the float product, Helium the
// exact one). Not held: a non-finite or subnormal x, a reciprocal that is
// not a normal float, or |zp + x / S| from 2^15 - 1/2 on, where Helium's
// lanes flush, or keep the low 16 bits of zp + round(x / S), as the device does.
void quantize_stage(const Graph& g, const Execution& run, const Node& n, const Tensor& out, StageBreaches& found) {
  const Tensor& x = arg_value(g, run, n, 0);
  const double s = static_cast<float>(std::get<double>(n.args.at(1)));
  const int64_t zp = std::get<int64_t>(n.args.at(2)), qmin = std::get<int64_t>(n.args.at(3)),
                qmax = std::get<int64_t>(n.args.at(4));
  const float inv = 1.0f / static_cast<float>(s);
  if (!std::isnormal(inv)) return;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float xf = static_cast<float>(x.data[i]);
    const double w = static_cast<double>(zp) + xf / s;  // in double: 2^-53 of |w| < 2^15, far below tol
    if (!std::isfinite(xf) || (xf != 0 && !std::isnormal(xf)) || std::fabs(w) >= 32767.5) continue;
    const double reach = 0.5 + std::fabs(w - zp) * 0x1p-21 + 0x1p-30;  // half an LSB and the float roundings
    const int64_t got = static_cast<int64_t>(out.data[i]);
    // A code within reach of w, or the bound it clamps to when w lies past it.
    const bool ok = std::fabs(got - w) <= reach || (got == qmax && w >= qmax - reach) ||
                    (got == qmin && w <= qmin + reach);
    if (!ok) {
      found.kernel = element(n, out.shape, i, "zp + x / S rounded to nearest and clamped gives", got,
                         std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(w)), qmin, qmax), true);
      return;
    }
  }
}

// dequantize_per_tensor (§1.7): (q - zp)·S within the rounding of float
// (and the smallest normal float, which Helium's flush-to-zero may take).
void dequantize_stage(const Graph& g, const Execution& run, const Node& n, const Tensor& out, StageBreaches& found) {
  const Tensor& q = arg_value(g, run, n, 0);
  const long double s = static_cast<float>(std::get<double>(n.args.at(1)));
  const int64_t zp = std::get<int64_t>(n.args.at(2));
  for (int64_t i = 0; i < q.numel(); ++i) {
    const long double want = (static_cast<int64_t>(q.data[i]) - zp) * s;
    if (!std::isfinite(want)) continue;
    const long double got = out.data[i];
    if (std::fabs(got - want) > std::fabs(want) * 0x1p-23L + std::numeric_limits<float>::min()) {
      found.kernel = breach(n, stage_element(n, out.shape, i) + " = " + real_str(got) + ", (q - zp)·S gives " + real_str(want),
                        true);
      return;
    }
  }
}

}  // namespace

int64_t requantize_cmsis(int64_t acc, int64_t multiplier, int64_t shift) {
  const int64_t left = std::max<int64_t>(shift, 0), right = std::max<int64_t>(-shift, 0);
  const i128 v = static_cast<i128>(acc) * (static_cast<i128>(1) << left);
  i128 r = v * multiplier + (static_cast<i128>(1) << 30);
  r = r >= 0 ? r / (static_cast<i128>(1) << 31) : -((-r + (static_cast<i128>(1) << 31) - 1) / (static_cast<i128>(1) << 31));
  if (right == 0) return static_cast<int64_t>(r);
  const i128 mask = (static_cast<i128>(1) << right) - 1;
  const i128 floor = r >= 0 ? r >> right : -((-r + mask) >> right);
  const i128 remainder = r - floor * (mask + 1);
  const i128 threshold = (mask >> 1) + (floor < 0 ? 1 : 0);
  return static_cast<int64_t>(floor + (remainder > threshold ? 1 : 0));
}

StageBreaches stage_breaches(const Graph& g, const Execution& run) {
  StageBreaches b;
  for (size_t i = 0; i < g.nodes.size() && !b.full(); ++i) {
    const Node& n = g.nodes[i];
    const Tensor& out = run.values.at(i).at(0);
    // quantize and dequantize have only their kernel's formula to break.
    if (n.op == kBmmOp) bmm_stage(g, run, n, out, b);
    else if (n.op == kMulOp) mul_stage(g, run, n, out, b);
    else if (n.op == kSoftmaxOp) softmax_stage(g, run, n, out, b);
    else if (n.op == kQuantizedLinearOp) linear_stage(g, run, n, out, b);
    else if (n.op == kQuantizeOp && !b.kernel) quantize_stage(g, run, n, out, b);
    else if (n.op == kDequantizeOp && !b.kernel) dequantize_stage(g, run, n, out, b);
  }
  return b;
}

std::optional<StageBreach> first_stage_out_of_bound(const Graph& g, const Execution& run) {
  StageBreaches b = stage_breaches(g, run);
  return b.kernel ? b.kernel : b.lowering;
}

}  // namespace sdpa::cortex_m
