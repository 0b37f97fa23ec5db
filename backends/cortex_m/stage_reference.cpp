// Fake-quantized and AOT-reference twins of the cortex_m int8 stages, as
// ExecuTorch's Cortex-M op tests compare them (cortex-m-and-xnnpack.md §1.7, §5.20).
#include "backends/cortex_m/stage_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cortex_m/cortex_m_ops.h"

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

std::string element(const Node& n, const Shape& shape, int64_t flat, const std::string& what, int64_t got,
                    int64_t want) {
  std::vector<int64_t> idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1, rest = flat; d >= 0; --d) {
    idx[d] = rest % shape[d];
    rest /= shape[d];
  }
  return "stage %" + n.name + " (" + n.op + "): output" + shape_str(idx) + " = " + std::to_string(got) + ", " + what +
         " " + std::to_string(want);
}

// One requantized stage: out[i] from its exact integer accumulator acc[i].
std::optional<std::string> requantized(const Node& n, const Tensor& out, const std::vector<int64_t>& acc,
                                       long double real_multiplier) {
  const int64_t zo = std::get<int64_t>(n.args.at(4)), m = std::get<int64_t>(n.args.at(5)),
                s = std::get<int64_t>(n.args.at(6));
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t got = static_cast<int64_t>(out.data[i]);
    const int64_t fake = clamp8(round_even(acc[i] * real_multiplier) + zo);
    if (std::llabs(got - fake) > 1)
      return element(n, out.shape, static_cast<int64_t>(i), "more than 1 LSB from its fake-quantized twin", got, fake);
    const int64_t aot = clamp8(static_cast<long double>(requantize_cmsis(acc[i], m, s) + zo));
    if (got != aot)
      return element(n, out.shape, static_cast<int64_t>(i), "the AOT reference requantize_cmsis gives", got, aot);
  }
  return std::nullopt;
}

double kwarg(const Node& n, const std::string& key) { return std::get<double>(*n.kwarg(key)); }

std::optional<std::string> bmm_stage(const Graph& g, const Execution& run, const Node& n, const Tensor& out) {
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
  return requantized(n, out, acc,
                     static_cast<long double>(kwarg(n, "lhs_scale")) * kwarg(n, "rhs_scale") / kwarg(n, "output_scale"));
}

std::optional<std::string> mul_stage(const Graph& g, const Execution& run, const Node& n, const Tensor& out) {
  const Tensor &a = arg_value(g, run, n, 0), &b = arg_value(g, run, n, 2);
  const int64_t za = std::get<int64_t>(n.args[1]), zb = std::get<int64_t>(n.args[3]);
  std::vector<int64_t> acc(a.numel());
  for (int64_t i = 0; i < a.numel(); ++i)
    acc[i] = (static_cast<int64_t>(a.data[i]) - za) * (static_cast<int64_t>(b.data[b.numel() == 1 ? 0 : i]) - zb);
  return requantized(n, out, acc,
                     static_cast<long double>(kwarg(n, "a_scale")) * kwarg(n, "b_scale") / kwarg(n, "output_scale"));
}

// quantized_linear: the int32 accumulator Σ_k (x - zp_in)·w + bias of each
// output, requantized by S_in·S_w/S_o (its offsets sit at args 3 and 4).
std::optional<std::string> linear_stage(const Graph& g, const Execution& run, const Node& n, const Tensor& out) {
  const Tensor &x = arg_value(g, run, n, 0), &w = arg_value(g, run, n, 1);
  const Tensor* b = std::holds_alternative<ValueRef>(n.args.at(2)) ? &arg_value(g, run, n, 2) : nullptr;
  const int64_t io = std::get<int64_t>(n.args.at(3)), zo = std::get<int64_t>(n.args.at(4)),
                m = std::get<int64_t>(n.args.at(5)), s = std::get<int64_t>(n.args.at(6));
  const int64_t K = w.shape[1], N = w.shape[0], rows = x.numel() / std::max<int64_t>(K, 1);
  const long double real = static_cast<long double>(kwarg(n, "input_scale")) * kwarg(n, "weight_scale") /
                           kwarg(n, "output_scale");
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < N; ++o) {
      int64_t acc = b ? static_cast<int64_t>(b->data[o]) : 0;
      for (int64_t k = 0; k < K; ++k)
        acc += (static_cast<int64_t>(x.data[r * K + k]) + io) * static_cast<int64_t>(w.data[o * K + k]);
      const int64_t got = static_cast<int64_t>(out.data[r * N + o]);
      const int64_t fake = clamp8(round_even(acc * real) + zo);
      if (std::llabs(got - fake) > 1)
        return element(n, out.shape, r * N + o, "more than 1 LSB from its fake-quantized twin", got, fake);
      const int64_t aot = clamp8(static_cast<long double>(requantize_cmsis(acc, m, s) + zo));
      if (got != aot) return element(n, out.shape, r * N + o, "the AOT reference requantize_cmsis gives", got, aot);
    }
  return std::nullopt;
}

std::optional<std::string> softmax_stage(const Graph& g, const Execution& run, const Node& n, const Tensor& out) {
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
  for (int64_t r0 = 0; row > 0 && r0 + row <= x.numel(); r0 += row) {
    long double mx = -std::numeric_limits<long double>::infinity(), total = 0;
    for (int64_t j = 0; j < row; ++j) mx = std::fmax(mx, x.data[r0 + j]);
    for (int64_t j = 0; j < row; ++j) total += e[j] = exp_at(x.data[r0 + j] - mx);
    for (int64_t j = 0; j < row; ++j) {
      const int64_t fake = clamp8(round_even(256 * e[j] / total) - 128);
      const int64_t got = static_cast<int64_t>(out.data[r0 + j]);
      if (std::llabs(got - fake) > 2)
        return element(n, out.shape, r0 + j, "more than 2 LSB from its fake-quantized twin", got, fake);
    }
  }
  return std::nullopt;
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

std::optional<std::string> first_stage_out_of_bound(const Graph& g, const Execution& run) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const Tensor& out = run.values.at(i).at(0);
    std::optional<std::string> breach;
    if (n.op == kBmmOp) breach = bmm_stage(g, run, n, out);
    else if (n.op == kMulOp) breach = mul_stage(g, run, n, out);
    else if (n.op == kSoftmaxOp) breach = softmax_stage(g, run, n, out);
    else if (n.op == kQuantizedLinearOp) breach = linear_stage(g, run, n, out);
    if (breach) return breach;
  }
  return std::nullopt;
}

}  // namespace sdpa::cortex_m
