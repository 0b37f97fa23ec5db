// Models arm_nn_requantize, the default (double-rounding) C path of CMSIS-NN
// (semantics/cortex-m-and-xnnpack.md §2.1): neither CMSIS_NN_USE_SINGLE_ROUNDING
// nor CMSIS_NN_USE_REQUANTIZE_INLINE_ASSEMBLY is defined by ExecuTorch.
#include "backends/cortex_m/cmsis/requantize.h"

#include <limits>

#include "backends/cortex_m/cmsis/cmsis_error.h"
#include "backends/cortex_m/cmsis/fixed_point.h"

namespace sdpa::cortex_m::cmsis {
namespace {

// CMSIS_NN_USE_SINGLE_ROUNDING: one rounding of v·M / 2^(31 - s), half toward
// +inf, in 64-bit; s = 31 leaves no rounding bit and is refused.
int32_t single_rounding(const char* kernel, int32_t v, int32_t multiplier, int32_t shift) {
  const int32_t total_shift = 31 - shift;
  if (total_shift < 1)
    throw CmsisUndefined({kernel, "shift", std::to_string(shift) + ": single rounding needs 31 - shift >= 1"});
  const int64_t product = int64_t{v} * multiplier;
  const int64_t result = ((product >> (total_shift - 1)) + 1) >> 1;
  if (result < std::numeric_limits<int32_t>::min() || result > std::numeric_limits<int32_t>::max())
    throw CmsisUndefined({kernel, "v·multiplier", "the single-rounded result leaves int32"});
  return static_cast<int32_t>(result);
}

}  // namespace

int32_t requantize_in(const char* kernel, const OperandName& value, int32_t v, int32_t multiplier,
                      int32_t shift, Rounding rounding, Overflow overflow) {
  if (multiplier == std::numeric_limits<int32_t>::min())
    throw CmsisUndefined(
        {kernel, "multiplier", "INT32_MIN is outside arm_nn_requantize's documented range [INT32_MIN+1, INT32_MAX]"});
  if (shift < -31 || shift > 31)
    throw CmsisUndefined({kernel, "shift", std::to_string(shift) + " is outside [-31, 31]: a C shift by 32 or more"});
  if (rounding == Rounding::single_rounding) return single_rounding(kernel, v, multiplier, shift);
  const int32_t left = shift > 0 ? shift : 0, right = shift < 0 ? -shift : 0;
  // Two's complement wrap of the 32-bit product (unsigned arithmetic is defined modulo 2^32).
  const int32_t shifted = overflow == Overflow::wrap
                              ? static_cast<int32_t>(static_cast<uint32_t>(v) << left)
                              : shift_left_as_c(v, left, kernel, value.with_suffix("·2^shift"));
  return divide_by_power_of_two(doubling_high_mult_no_sat(shifted, multiplier), right);
}

int32_t requantize(int32_t v, int32_t multiplier, int32_t shift, Overflow overflow) {
  return requantize_in("arm_nn_requantize", "v", v, multiplier, shift, Rounding::double_rounding, overflow);
}

}  // namespace sdpa::cortex_m::cmsis
