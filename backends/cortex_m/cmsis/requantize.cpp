// Models arm_nn_requantize, the default (double-rounding) C path of CMSIS-NN
// (semantics/cortex-m-and-xnnpack.md §2.1): neither CMSIS_NN_USE_SINGLE_ROUNDING
// nor CMSIS_NN_USE_REQUANTIZE_INLINE_ASSEMBLY is defined by ExecuTorch.
#include "backends/cortex_m/cmsis/requantize.h"

#include <limits>

#include "backends/cortex_m/cmsis/cmsis_error.h"
#include "backends/cortex_m/cmsis/fixed_point.h"

namespace sdpa::cortex_m::cmsis {

int32_t requantize_in(const std::string& kernel, const std::string& value, int32_t v, int32_t multiplier,
                      int32_t shift) {
  if (multiplier == std::numeric_limits<int32_t>::min())
    throw CmsisUndefined(
        {kernel, "multiplier", "INT32_MIN is outside arm_nn_requantize's documented range [INT32_MIN+1, INT32_MAX]"});
  if (shift < -31 || shift > 31)
    throw CmsisUndefined({kernel, "shift", std::to_string(shift) + " is outside [-31, 31]: a C shift by 32 or more"});
  const int32_t left = shift > 0 ? shift : 0, right = shift < 0 ? -shift : 0;
  const int32_t shifted = shift_left_as_c(v, left, kernel, value + "·2^shift");
  return divide_by_power_of_two(doubling_high_mult_no_sat(shifted, multiplier), right);
}

int32_t requantize(int32_t v, int32_t multiplier, int32_t shift) {
  return requantize_in("arm_nn_requantize", "v", v, multiplier, shift);
}

}  // namespace sdpa::cortex_m::cmsis
