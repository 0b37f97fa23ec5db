#pragma once
/// The int8 stage reference (NUMERICS.md "Int8 pipelines"): each int8 stage of
/// a lowered graph, run on the cmsis-nn kernels, against a twin computed from
/// the stage's own int8 inputs:
///  - its fake-quantized twin, clamp(round_half_even(real result / S_out) + Z_out),
///    against the codes the stage's arguments give (the references below; a
///    softmax the lowering did not write: its output): within 1 LSB for
///    quantized_batch_matmul, quantized_mul and quantized_linear, 2 LSB for softmax;
///  - for bmm, mul and linear, the AOT reference that ExecuTorch's tests hold the kernels
///    to, requantize_cmsis (passes_utils.py, double rounding): bit-exact;
///  - for softmax, an integer reference of arm_softmax_s8 (softmax_s8_reference.h):
///    bit-exact;
///  - quantize_per_tensor: a correct rounding of zp + x / S, clamped;
///    dequantize_per_tensor: (q - zp)·S within float's rounding.
#include <optional>
#include <string>

#include "harness/ir/interpreter.h"

namespace sdpa::cortex_m {

/// requantize_cmsis(acc, M, s): (acc·2^max(s,0)·M + 2^30) >> 31 (floor), then
/// divided by 2^max(-s,0) rounding half away from zero, in unbounded integers.
int64_t requantize_cmsis(int64_t acc, int64_t multiplier, int64_t shift);

/// A stage out of its bound. `in_kernel`: the kernel departs from its own
/// arguments (the AOT requantize, the integer softmax reference, quantize's
/// and dequantize's formulas; for a softmax the lowering did not write, the
/// twin too); otherwise the codes those arguments give (the AOT or integer
/// reference's, not the kernel's) depart from the fake-quantized twin: the
/// lowering's multiplier, shift or diff_min.
struct StageBreach {
  std::string node;    // "%name (op)"
  std::string detail;  // the node, the element and both values
  bool in_kernel = true;
};

/// The first breach of each kind over the stages of `g` in graph order, so
/// that a kernel's breach hides no lowering's and the reverse.
struct StageBreaches {
  std::optional<StageBreach> kernel, lowering;
  bool full() const { return kernel && lowering; }
};

/// The breaches of `g`'s stages in `run` (all values kept).
StageBreaches stage_breaches(const Graph& g, const Execution& run);

/// The kernel's first breach where there is one, else the lowering's; none
/// when every stage holds.
std::optional<StageBreach> first_stage_out_of_bound(const Graph& g, const Execution& run);

}  // namespace sdpa::cortex_m
