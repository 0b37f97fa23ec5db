// Models arm_fully_connected_s8 from the primitives arm_batch_matmul_s8 is
// modeled with (the semantics pages give only its call, §1.7): the same
// arm_nn_vec_mat_mult_t_s8 row loop with filter_offset 0 plus an int32 bias,
// an exact int32 accumulation, arm_nn_requantize, + output_offset, clamp. The
// MVE path's kernel_sum = input_offset·Σ_k w + bias (§1.7) is algebraically
// equal and only checked for int32 overflow.
#include "backends/cortex_m/cmsis/fully_connected_s8.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "backends/cortex_m/cmsis/cmsis_error.h"

namespace sdpa::cortex_m::cmsis {
namespace {

constexpr const char* kKernel = "arm_fully_connected_s8";

bool fits(int64_t v) { return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(); }

// Every prefix of every order of the terms lies between the sum of the
// negative terms and the sum of the positive ones.
struct AnyOrderSum {
  int64_t positive = 0, negative = 0;
  void add(int64_t t) { (t > 0 ? positive : negative) += t; }
  bool safe() const { return fits(positive) && fits(negative); }
  int64_t value() const { return positive + negative; }
};

}  // namespace

std::vector<int8_t> arm_fully_connected_s8(const std::vector<int8_t>& input, const std::vector<int8_t>& weight,
                                           const std::vector<int32_t>& bias, const FullyConnectedDims& d,
                                           const FullyConnectedParams& p) {
  if (d.rows < 0 || d.n < 0 || d.k < 0 || static_cast<int64_t>(input.size()) != d.rows * d.k ||
      static_cast<int64_t>(weight.size()) != d.n * d.k || (!bias.empty() && static_cast<int64_t>(bias.size()) != d.n))
    throw std::invalid_argument("arm_fully_connected_s8: input has " + std::to_string(input.size()) + ", weight " +
                                std::to_string(weight.size()) + " and bias " + std::to_string(bias.size()) +
                                " elements, not [rows,K], [N,K] and [N] of rows=" + std::to_string(d.rows) +
                                " N=" + std::to_string(d.n) + " K=" + std::to_string(d.k));
  if (p.activation_min < -128 || p.activation_max > 127 || p.activation_min > p.activation_max)
    throw CmsisUndefined({kKernel, "activation_min/activation_max",
                          "[" + std::to_string(p.activation_min) + ", " + std::to_string(p.activation_max) +
                              "] is not an int8 range"});
  if (!fits(int64_t{p.input_offset} - 128) || !fits(int64_t{p.input_offset} + 127))
    throw CmsisUndefined({kKernel, "input_offset", std::to_string(p.input_offset) + ": input + input_offset overflows int32"});
  // The MVE path's kernel sums.
  for (int64_t n = 0; n < d.n; ++n) {
    AnyOrderSum w;
    for (int64_t k = 0; k < d.k; ++k) w.add(weight[n * d.k + k]);
    const int64_t sum = w.value() * p.input_offset + (bias.empty() ? 0 : bias[n]);
    if (!w.safe() || !fits(w.value() * p.input_offset) || !fits(sum))
      throw CmsisUndefined({kKernel, "kernel_sum[" + std::to_string(n) + "]",
                            "input_offset·Σ_k w + bias overflows int32 (MVE path)"});
  }
  std::vector<int8_t> out(d.rows * d.n);
  std::vector<int32_t> acc(out.size());
  for (int64_t r = 0; r < d.rows; ++r)
    for (int64_t n = 0; n < d.n; ++n) {
      AnyOrderSum s;
      if (!bias.empty()) s.add(bias[n]);
      for (int64_t k = 0; k < d.k; ++k) s.add((int64_t{input[r * d.k + k]} + p.input_offset) * weight[n * d.k + k]);
      if (!s.safe())
        throw CmsisUndefined({kKernel, OperandName("acc", {r, n}).str(),
                              "Σ_k (input + input_offset)·w + bias can overflow int32 (K=" + std::to_string(d.k) + ")"});
      acc[r * d.n + n] = static_cast<int32_t>(s.value());
    }
  for (int64_t i = 0; i < static_cast<int64_t>(acc.size()); ++i) {
    const OperandName name("acc", {i / std::max<int64_t>(d.n, 1), i % std::max<int64_t>(d.n, 1)});
    const int64_t v =
        int64_t{requantize_in(kKernel, name, acc[i], p.multiplier, p.shift, p.rounding, p.overflow)} + p.output_offset;
    if (!fits(v))
      throw CmsisUndefined({kKernel, "output_offset", "requantize(" + name.str() + ") + output_offset overflows int32"});
    out[i] = static_cast<int8_t>(std::clamp<int64_t>(v, p.activation_min, p.activation_max));
  }
  return out;
}

}  // namespace sdpa::cortex_m::cmsis
