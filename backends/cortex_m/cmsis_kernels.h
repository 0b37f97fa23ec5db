#pragma once
/// Kernel sets for the lowered Cortex-M graph.
///  cmsis-nn: the cortex_m ops on the CMSIS-NN int8 models (cmsis/), and the
///            portable fp32 kernels (the harness reference kernels, emulated)
///            for every aten op left in the graph, as ExecuTorch runs them.
///  exact:    what the lowered graph means with infinite precision: an int8
///            value is its unrounded, unclamped code x / scale + zero_point,
///            each cortex_m op the real computation its qparams describe.
/// A CMSIS model's refusal becomes a KernelError naming kernel and operand:
/// CmsisUndefined (undefined behaviour in the C code) recoverable,
/// CmsisCheckFailed (ET_CHECK_MSG aborts the runtime) fatal.
#include "backends/cortex_m/cmsis/isa.h"
#include "backends/cortex_m/cmsis/quantize.h"
#include "backends/cortex_m/cmsis/requantize.h"
#include "backends/cortex_m/cmsis/softmax_s8.h"
#include "harness/ir/kernel_set.h"

namespace sdpa::cortex_m {

/// `linear_accumulation`: what the portable fp32 linear accumulates in (f16:
/// a self-test mutant); `overflow`: arm_nn_requantize's left shift past int32;
/// `isa`: the scalar or the Helium code paths (quantize_per_tensor's blocks
/// of 16, arm_softmax_s8's vector lanes; the requantize of the batch matmul
/// and the elementwise multiply is the same on both in the default build).
/// Kernels made deliberately wrong, for the self-test mutants.
struct KernelFaults {
  cmsis::FinalShift softmax_shift = cmsis::FinalShift::divide_by_power_of_two;  // arm_softmax_s8's last division
  cmsis::QuantizeRounding quantize = cmsis::QuantizeRounding::to_nearest_even;   // quantize_per_tensor's rounding
};

KernelSet cmsis_nn_kernels(cmsis::Rounding rounding = cmsis::Rounding::double_rounding,
                           DType linear_accumulation = DType::f32,
                           cmsis::Overflow overflow = cmsis::Overflow::undefined, cmsis::Isa isa = cmsis::Isa::scalar,
                           KernelFaults faults = {});
KernelSet exact_cortex_m_kernels();

}  // namespace sdpa::cortex_m
