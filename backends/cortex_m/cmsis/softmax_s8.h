#pragma once
/// A model of CMSIS-NN's arm_softmax_s8 (Source/SoftmaxFunctions/
/// arm_softmax_s8.c, non-MVE path arm_nn_softmax_common_s8.c),
/// semantics/cortex-m-and-xnnpack.md §2.2, as ExecuTorch's cortex_m.softmax
/// calls it: output scale 1/256, zero point -128.
#include <cstdint>
#include <vector>

#include "backends/cortex_m/cmsis/isa.h"

namespace sdpa::cortex_m::cmsis {

/// The kernel's parameters: `mult` and `shift` turn an int8 difference from
/// the row max into the Q5.26 exponent input, `diff_min` drops elements
/// further than that below the max. The lowering computes them from the input
/// scale (softmax_params in lowering_params.h); diff_min is kept 64-bit here
/// because that computation can leave int32 (the kernel then refuses it).
struct SoftmaxParams {
  int32_t mult = 0;
  int32_t shift = 0;
  int64_t diff_min = 0;
};

/// The number of accumulation bits of the Q12.19 row sum (ACCUM_BITS).
inline constexpr int32_t kSoftmaxAccumBits = 12;

/// arm_softmax_s8(input, num_rows, row_size, mult, shift, diff_min, output)
/// over `num_rows` contiguous rows of `row_size`; out ≈ round(256·p) - 128.
/// Refused with CmsisUndefined (kernel "arm_softmax_s8"), each check made
/// before the operation it guards, nothing returned: shift outside the header's [0, 31] ("shift"), diff_min outside
/// int32 ("diff_min"), row_size < 1 ("row_size": the max reads past the row),
/// a kept difference whose d·2^shift overflows int32 ("input (row r, column
/// c)"), a row sum that overflows int32 ("sum (row r)": uniform rows from
/// 4096), and a final DIV_POW2 exponent bits_over_unit >= 32 ("bits_over_unit (row r)":
/// uniform rows from 512). A row whose sum is 0 (diff_min > 0 keeps no
/// element) is all -128, as upstream's guard makes it. std::invalid_argument
/// if input.size() is not num_rows·row_size.
/// Helium (arm_softmax_s8.c's MVE path, CMSIS-NN v7.0.0; GCC 12.0 to 12.2
/// builds define ARM_GCC_12_2_ICE and run the scalar code) computes the same
/// values; its vector lanes (the first row_size / 4·4 elements of a row) wrap
/// d·2^shift and take a final shift of 32 or more as 0 (the output -128), so
/// only the row's scalar tail is refused for those, and an empty row is not.
/// How the last step divides by 2^bits_over_unit: DIV_POW2 (upstream), or a
/// plain arithmetic shift, 1 LSB low on about half the outputs above -128
/// (the self-test mutant softmax-truncating-shift).
enum class FinalShift { divide_by_power_of_two, truncating };

std::vector<int8_t> arm_softmax_s8(const std::vector<int8_t>& input, int64_t num_rows, int64_t row_size,
                                   const SoftmaxParams& params, Isa isa = Isa::scalar,
                                   FinalShift final_shift = FinalShift::divide_by_power_of_two);

}  // namespace sdpa::cortex_m::cmsis
