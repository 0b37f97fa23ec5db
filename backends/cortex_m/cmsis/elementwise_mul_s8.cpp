// Models arm_elementwise_mul_s8 (semantics/cortex-m-and-xnnpack.md §2.4):
// per element (a + off_a)·(b + off_b) in int32, arm_nn_requantize (double
// rounding), + output_offset, clamp to the activation range.
#include "backends/cortex_m/cmsis/elementwise_mul_s8.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "backends/cortex_m/cmsis/cmsis_error.h"
#include "backends/cortex_m/cmsis/requantize.h"

namespace sdpa::cortex_m::cmsis {
namespace {

constexpr const char* kKernel = "arm_elementwise_mul_s8";

bool fits(int64_t v) { return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(); }

void check_offset(int32_t offset, const char* name) {
  if (!fits(int64_t{offset} - 128) || !fits(int64_t{offset} + 127))
    throw CmsisUndefined({kKernel, name, std::to_string(offset) + ": an int8 plus this offset overflows int32"});
}

}  // namespace

std::vector<int8_t> arm_elementwise_mul_s8(const std::vector<int8_t>& a, const std::vector<int8_t>& b,
                                           const ElementwiseMulParams& p) {
  if (a.size() != b.size())
    throw std::invalid_argument("arm_elementwise_mul_s8: inputs of " + std::to_string(a.size()) + " and " +
                                std::to_string(b.size()) + " elements");
  if (p.activation_min < -128 || p.activation_max > 127 || p.activation_min > p.activation_max)
    throw CmsisUndefined(
        {kKernel, "activation_min/activation_max",
         "[" + std::to_string(p.activation_min) + ", " + std::to_string(p.activation_max) + "] is not an int8 range"});
  check_offset(p.input_1_offset, "input_1_offset");
  check_offset(p.input_2_offset, "input_2_offset");
  std::vector<int8_t> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const OperandName name("product", {static_cast<int64_t>(i)});
    const int64_t product = (int64_t{a[i]} + p.input_1_offset) * (int64_t{b[i]} + p.input_2_offset);
    if (!fits(product))
      throw CmsisUndefined({kKernel, name.str(), "(a + input_1_offset)·(b + input_2_offset) overflows int32"});
    const int64_t v =
        int64_t{requantize_in(kKernel, name, static_cast<int32_t>(product), p.multiplier, p.shift, p.rounding,
                              p.overflow)} +
        p.output_offset;
    if (!fits(v))
      throw CmsisUndefined(
          {kKernel, "output_offset", "requantize(" + name.str() + ") + output_offset overflows int32"});
    out[i] = static_cast<int8_t>(std::clamp<int64_t>(v, p.activation_min, p.activation_max));
  }
  return out;
}

}  // namespace sdpa::cortex_m::cmsis
