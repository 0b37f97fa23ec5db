#pragma once
/// Models of the CMSIS-NN fixed-point primitives (Include/
/// arm_nnsupportfunctions.h, default C paths: neither
/// CMSIS_NN_USE_SINGLE_ROUNDING nor the inline assembly),
/// semantics/cortex-m-and-xnnpack.md §2.1 and §2.2 step 4 and 6. Values are
/// raw int32 fixed-point numbers; the Q format is named where it matters.
#include <cstdint>
#include <string>

#include "backends/cortex_m/cmsis/cmsis_error.h"

namespace sdpa::cortex_m::cmsis {

/// arm_nn_doubling_high_mult (MUL_SAT): floor((a·b + 2^30) / 2^31), i.e.
/// a·b/2^31 rounded half toward +inf (Arm VQRDMULH); INT32_MIN·INT32_MIN
/// saturates to INT32_MAX.
int32_t doubling_high_mult(int32_t a, int32_t b);

/// arm_nn_doubling_high_mult_no_sat: (a·b + 2^30) >> 31 in 64-bit, the same
/// rounding without saturation. The one product whose result leaves int32
/// (INT32_MIN·INT32_MIN gives 2^31) is refused with CmsisUndefined.
int32_t doubling_high_mult_no_sat(int32_t a, int32_t b);

/// arm_nn_divide_by_power_of_two (DIV_POW2): x / 2^exponent rounded half away
/// from zero. An exponent outside [0, 31] (C shifts by 32 or more, or by a
/// negative amount) is refused with CmsisUndefined.
int32_t divide_by_power_of_two(int32_t x, int32_t exponent);

/// arm_nn_mult_by_power_of_two (MUL_POW2): x·2^exponent saturated to int32,
/// exponent in [0, 30] (refused with CmsisUndefined otherwise).
int32_t mult_by_power_of_two(int32_t x, int32_t exponent);

/// The C expression `v * (1 << shift)` that arm_nn_requantize and
/// arm_softmax_s8 use as a left shift. `shift` must be in [0, 31] and v·2^shift
/// must fit int32; for shift = 31 (`1 << 31` is INT32_MIN on the Arm
/// compilers) only v = 0 does. Anything else is signed overflow: refused with
/// CmsisUndefined naming `kernel` and `operand`.
int32_t shift_left_as_c(int32_t v, int32_t shift, const char* kernel, const OperandName& operand);

/// arm_nn_exp_on_negative_values: gemmlowp's exp_on_negative_values for a
/// Q5.26 input z <= 0, result in Q0.31; z == 0 gives INT32_MAX. Inputs z > 0
/// are outside the function's domain but well defined in C, and computed as C
/// does.
int32_t exp_on_negative_values(int32_t z);

/// arm_nn_one_over_one_plus_x_for_x_in_0_1: 1/(1 + x) for x in [0, 1), both in
/// Q0.31, by Newton-Raphson on the half denominator (3 iterations, Q2.29).
int32_t one_over_one_plus_x_for_x_in_0_1(int32_t x);

/// __CLZ: the number of leading zero bits; 32 for 0.
int32_t count_leading_zeros(uint32_t x);

}  // namespace sdpa::cortex_m::cmsis
