// Models arm_batch_matmul_s8 (one arm_nn_vec_mat_mult_t_s8 call per lhs row)
// as semantics/cortex-m-and-xnnpack.md §2.3 describes it: an exact int32
// accumulation of (lhs + input_offset)·(rhs + filter_offset), arm_nn_requantize,
// + output_offset, clamp. The MVE path's algebraically equal split (a vector
// sum input_offset·Σ(rhs + filter_offset) and filter_offset·Σ lhs added on the
// fly) is only used to check that none of its int32 intermediates overflows.
#include "backends/cortex_m/cmsis/batch_matmul_s8.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "backends/cortex_m/cmsis/cmsis_error.h"
#include "backends/cortex_m/cmsis/requantize.h"

namespace sdpa::cortex_m::cmsis {
namespace {

constexpr const char* kKernel = "arm_batch_matmul_s8";
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

bool fits(int64_t v) { return v >= kInt32Min && v <= kInt32Max; }

// A sum of int32 terms that no summation order overflows: every prefix of every
// order lies between the sum of the negative terms and the sum of the positive ones.
struct AnyOrderSum {
  int64_t positive = 0, negative = 0;
  void add(int64_t t) { (t > 0 ? positive : negative) += t; }
  bool safe() const { return fits(positive) && fits(negative); }
  int64_t value() const { return positive + negative; }
};

std::string index(int64_t a, int64_t b) { return "[" + std::to_string(a) + "," + std::to_string(b) + "]"; }

}  // namespace

std::vector<int8_t> arm_batch_matmul_s8(const std::vector<int8_t>& lhs, const std::vector<int8_t>& rhs_t,
                                        const BatchMatmulDims& d, const BatchMatmulParams& p) {
  if (d.batch < 0 || d.m < 0 || d.n < 0 || d.k < 0 || static_cast<int64_t>(lhs.size()) != d.batch * d.m * d.k ||
      static_cast<int64_t>(rhs_t.size()) != d.batch * d.n * d.k)
    throw std::invalid_argument(
        "arm_batch_matmul_s8: lhs has " + std::to_string(lhs.size()) + " and rhs_t " + std::to_string(rhs_t.size()) +
        " elements, not [B,M,K] and [B,N,K] of B=" + std::to_string(d.batch) + " M=" + std::to_string(d.m) +
        " N=" + std::to_string(d.n) + " K=" + std::to_string(d.k));
  if (p.activation_min < -128 || p.activation_max > 127 || p.activation_min > p.activation_max)
    throw CmsisUndefined(
        {kKernel, "activation_min/activation_max",
         "[" + std::to_string(p.activation_min) + ", " + std::to_string(p.activation_max) + "] is not an int8 range"});
  // int8 + int32 offset is an int32 addition.
  if (!fits(int64_t{p.input_offset} - 128) || !fits(int64_t{p.input_offset} + 127))
    throw CmsisUndefined(
        {kKernel, "input_offset", std::to_string(p.input_offset) + ": lhs + input_offset overflows int32"});
  if (!fits(int64_t{p.filter_offset} - 128) || !fits(int64_t{p.filter_offset} + 127))
    throw CmsisUndefined(
        {kKernel, "filter_offset", std::to_string(p.filter_offset) + ": rhs + filter_offset overflows int32"});

  // The MVE path's per-column vector sums, input_offset·Σ_k(rhs + filter_offset).
  std::vector<int64_t> vector_sum(d.batch * d.n);
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t n = 0; n < d.n; ++n) {
      AnyOrderSum s;
      for (int64_t k = 0; k < d.k; ++k) s.add(int64_t{rhs_t[(b * d.n + n) * d.k + k]} + p.filter_offset);
      const int64_t v = s.value() * p.input_offset;
      if (!s.safe() || !fits(v))
        throw CmsisUndefined(
            {kKernel, "vector_sum" + index(b, n), "input_offset·Σ_k(rhs + filter_offset) overflows int32 (MVE path)"});
      vector_sum[b * d.n + n] = v;
    }

  std::vector<int32_t> acc(d.batch * d.m * d.n);
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t m = 0; m < d.m; ++m)
      for (int64_t n = 0; n < d.n; ++n) {
        const int8_t* l = lhs.data() + (b * d.m + m) * d.k;
        const int8_t* r = rhs_t.data() + (b * d.n + n) * d.k;
        AnyOrderSum scalar, mve;
        mve.add(vector_sum[b * d.n + n]);
        for (int64_t k = 0; k < d.k; ++k) {
          scalar.add((int64_t{l[k]} + p.input_offset) * (int64_t{r[k]} + p.filter_offset));
          mve.add(int64_t{l[k]} * r[k]);
          mve.add(int64_t{l[k]} * p.filter_offset);
        }
        const OperandName name("acc", {b, m, n});
        if (!scalar.safe())
          throw CmsisUndefined(
              {kKernel, name.str(),
               "Σ_k (lhs + input_offset)·(rhs + filter_offset) can overflow int32 (K=" + std::to_string(d.k) + ")"});
        if (!mve.safe())
          throw CmsisUndefined(
              {kKernel, name.str(),
               "the MVE path's Σ lhs·rhs + filter_offset·Σ lhs + vector_sum can overflow int32"});
        acc[(b * d.m + m) * d.n + n] = static_cast<int32_t>(scalar.value());
      }

  std::vector<int8_t> out(acc.size());
  for (int64_t i = 0; i < static_cast<int64_t>(acc.size()); ++i) {
    const int64_t b = i / (d.m * d.n), m = i / d.n % d.m, n = i % d.n;
    const OperandName name("acc", {b, m, n});
    const int64_t v =
        int64_t{requantize_in(kKernel, name, acc[i], p.multiplier, p.shift, p.rounding, p.overflow)} + p.output_offset;
    if (!fits(v))
      throw CmsisUndefined(
          {kKernel, "output_offset", "requantize(" + name.str() + ") + output_offset overflows int32"});
    out[i] = static_cast<int8_t>(std::clamp<int64_t>(v, p.activation_min, p.activation_max));
  }
  return out;
}

}  // namespace sdpa::cortex_m::cmsis
