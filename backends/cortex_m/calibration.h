#pragma once
/// Calibration of the Cortex-M quantizer on the case's own tensors: the entry
/// graph carries the call's example inputs as constants (what export hands
/// prepare_pt2e together with the model), the float graph runs on them once,
/// and per-tensor int8 MinMaxObservers read each value.
#include <cstdint>
#include <map>
#include <string>

#include "harness/ir/graph.h"
#include "harness/ir/interpreter.h"

namespace sdpa::cortex_m {

/// Stores `inputs` in g.constants as "example_inputs.<placeholder input>",
/// and `data_seed` (the case's, whose streams draw dropout's keep mask) as
/// "example_inputs.data_seed": the observers see the run's own dropout mask,
/// as they see its own tensors.
void attach_example_inputs(Graph& g, const std::map<std::string, Tensor>& inputs, uint64_t data_seed = 0);

/// Runs `g` in exact numerics on the example inputs it carries and keeps
/// every node's value. InputError naming the placeholder when one is missing.
Execution calibrate(const Graph& g);

/// torch's MinMaxObserver for per_tensor_affine int8 in [-128, 127], in double:
/// the range widened to hold 0, scale = max((max - min) / 255, f32 eps),
/// zero_point = -128 - round_half_even(min / scale), clamped to [-128, 127].
QParams minmax_qparams(const Tensor& x);

}  // namespace sdpa::cortex_m
