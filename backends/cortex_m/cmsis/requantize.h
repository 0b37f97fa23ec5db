#pragma once
/// A model of CMSIS-NN's arm_nn_requantize (Include/arm_nnsupportfunctions.h,
/// default C path), semantics/cortex-m-and-xnnpack.md §2.1.
#include <cstdint>
#include <string>

#include "backends/cortex_m/cmsis/cmsis_error.h"

namespace sdpa::cortex_m::cmsis {

/// Which arm_nn_requantize CMSIS-NN is built with: the default C path (double
/// rounding), or CMSIS_NN_USE_SINGLE_ROUNDING, which rounds v·M·2^(s-31) once,
/// half toward +inf (a build ExecuTorch does not use: the self-tests' mutant).
enum class Rounding { double_rounding, single_rounding };

/// What arm_nn_requantize's left shift `v * (1 << s)` does past int32: signed
/// overflow is undefined in C (`undefined`: refused with CmsisUndefined), the
/// code Arm compilers emit for it (a 32-bit multiply, no saturation) wraps
/// modulo 2^32 (`wrap`, cortex-m-and-xnnpack.md §2.1 "wraps in int32").
enum class Overflow { undefined, wrap };

/// arm_nn_requantize(v, M, s) = DIV_POW2(MUL_NO_SAT(v·2^max(s,0), M), max(-s,0)):
/// DOUBLE rounding, first half toward +inf at 2^-31, then half away from zero
/// at 2^-max(-s,0); the value is about v·M·2^(s-31).
/// Refused with CmsisUndefined (kernel "arm_nn_requantize"): M outside the
/// documented [INT32_MIN+1, INT32_MAX] (operand "multiplier"), s outside
/// [-31, 31] (operand "shift": a C shift by 32 or more), and a left shift
/// v·2^s that leaves int32 (operand "v·2^shift"; C's `v * (1 << s)` overflows,
/// and for s = 31 every v but 0 does) unless `overflow` is wrap.
int32_t requantize(int32_t v, int32_t multiplier, int32_t shift, Overflow overflow = Overflow::undefined);

/// requantize as a step of `kernel`: a refusal names `kernel` and the operands
/// "multiplier", "shift" or `value` + "·2^shift" (e.g. "acc[0,1,2]·2^shift").
int32_t requantize_in(const char* kernel, const OperandName& value, int32_t v, int32_t multiplier,
                      int32_t shift, Rounding rounding = Rounding::double_rounding,
                      Overflow overflow = Overflow::undefined);

}  // namespace sdpa::cortex_m::cmsis
