// Models arm_softmax_s8 / arm_nn_softmax_common_s8 step by step (and where
// the MVE path differs) as semantics/cortex-m-and-xnnpack.md §2.2 lists it: row max, Q5.26 exponent
// input MUL_SAT(d·2^shift, mult) for d >= diff_min, EXP_ON_NEG, a Q12.19 sum of
// DIV_POW2(e, 12), CLZ and ONE_OVER1 for 1/sum, then DIV_POW2(MUL_SAT(scale,
// e), 35 - clz) - 128 clamped to int8. Every limit of a row is checked before
// the row's output is computed.
#include "backends/cortex_m/cmsis/softmax_s8.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "backends/cortex_m/cmsis/cmsis_error.h"
#include "backends/cortex_m/cmsis/fixed_point.h"

namespace sdpa::cortex_m::cmsis {
namespace {

constexpr const char* kKernel = "arm_softmax_s8";

}  // namespace

std::vector<int8_t> arm_softmax_s8(const std::vector<int8_t>& input, int64_t num_rows, int64_t row_size,
                                   const SoftmaxParams& params, Isa isa, FinalShift final_shift) {
  if (num_rows < 0 || row_size < 0 || static_cast<int64_t>(input.size()) != num_rows * row_size)
    throw std::invalid_argument("arm_softmax_s8: input has " + std::to_string(input.size()) + " elements, not " +
                                std::to_string(num_rows) + " rows of " + std::to_string(row_size));
  if (params.shift < 0 || params.shift > 31)
    throw CmsisUndefined(
        {kKernel, "shift", std::to_string(params.shift) + " is outside the header's [0, 31] (1 << shift)"});
  if (params.diff_min < std::numeric_limits<int32_t>::min() || params.diff_min > std::numeric_limits<int32_t>::max())
    throw CmsisUndefined(
        {kKernel, "diff_min", std::to_string(params.diff_min) + " does not fit the int32_t parameter"});
  // Helium's max starts from -128 and reads whole vectors, so an empty row is read nowhere.
  if (row_size < 1 && num_rows > 0 && isa == Isa::scalar)
    throw CmsisUndefined({kKernel, "row_size", "0: the row max reads input[0] past the row"});
  if (row_size < 1) return {};
  const int32_t diff_min = static_cast<int32_t>(params.diff_min);
  // Helium computes the first row_size / 4·4 elements in vector lanes, the rest in C.
  const int64_t vector_end = isa == Isa::helium ? row_size / 4 * 4 : 0;

  std::vector<int8_t> out(input.size());
  for (int64_t r = 0; r < num_rows; ++r) {
    const int8_t* x = input.data() + r * row_size;
    const int32_t max = *std::max_element(x, x + row_size);
    auto row = [r] { return " (row " + std::to_string(r) + ")"; };  // for a refusal's operand only

    // The exponent of each kept element, Q0.31 (nothing is kept below diff_min).
    std::vector<int32_t> e(row_size, 0);
    std::vector<bool> kept(row_size, false);
    int64_t sum = 0;  // Q12.19, an int32 upstream
    for (int64_t c = 0; c < row_size; ++c) {
      const int32_t d = x[c] - max;
      if (d < diff_min) continue;
      kept[c] = true;
      const OperandName input("input", {r, c}, OperandName::Style::row_column);
      // d·2^shift: vmulq_n_s32 wraps in the vector lanes; C's signed overflow is undefined.
      const int32_t scaled = c < vector_end ? static_cast<int32_t>(static_cast<uint32_t>(d) << params.shift)
                                            : shift_left_as_c(d, params.shift, kKernel, input);
      e[c] = exp_on_negative_values(doubling_high_mult(scaled, params.mult));
      sum += divide_by_power_of_two(e[c], kSoftmaxAccumBits);
      if (sum > std::numeric_limits<int32_t>::max())
        throw CmsisUndefined(
            {kKernel, "sum" + row(), "the Q12.19 row sum overflows int32 at column " + std::to_string(c)});
    }
    // A sum of 0 (diff_min > 0 drops the max too) keeps no element: upstream
    // guards the shift (sum > 0 ? sum << headroom : 0) and CMSIS's __CLZ(0)
    // is 32, so the row is all -128.
    int8_t* y = out.data() + r * row_size;
    if (sum == 0) {
      std::fill(y, y + row_size, static_cast<int8_t>(-128));
      continue;
    }
    const int32_t headroom = count_leading_zeros(static_cast<uint32_t>(sum));
    const int32_t bits_over_unit = kSoftmaxAccumBits - headroom + 23;
    // Helium's vector lanes shift by 32 or more to 0; the scalar code (and
    // Helium's tail of row_size % 4 elements) shifts a C int by it.
    if (bits_over_unit > 31) {
      const bool scalar_reads_it = std::any_of(kept.begin() + vector_end, kept.end(), [](bool k) { return k; });
      if (scalar_reads_it)
        throw CmsisUndefined({kKernel, "bits_over_unit" + row(),
                              "DIV_POW2 by " + std::to_string(bits_over_unit) + " (row sum " + std::to_string(sum) +
                                  " >= 2^28, a real sum of exponentials >= 512): a C shift by 32 or more"});
      std::fill(y, y + row_size, static_cast<int8_t>(-128));
      continue;
    }
    // sum·2^headroom is in [2^31, 2^32): minus 2^31 it is x of 1/(1 + x), in Q0.31.
    const int32_t shifted_scale =
        one_over_one_plus_x_for_x_in_0_1(static_cast<int32_t>((sum << headroom) - (int64_t{1} << 31)));

    for (int64_t c = 0; c < row_size; ++c) {
      if (!kept[c]) {
        y[c] = -128;
        continue;
      }
      const int32_t scaled = doubling_high_mult(shifted_scale, e[c]);
      const int32_t v = (final_shift == FinalShift::truncating ? scaled >> bits_over_unit
                                                               : divide_by_power_of_two(scaled, bits_over_unit)) -
                        128;
      y[c] = static_cast<int8_t>(std::clamp(v, -128, 127));
    }
  }
  return out;
}

}  // namespace sdpa::cortex_m::cmsis
