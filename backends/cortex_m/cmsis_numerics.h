#pragma once
/// How the cmsis-nn kernel set computes a case, read from the lowered graph
/// it runs: the declaration the accuracy bound derives from.
#include "harness/case/case.h"
#include "harness/check/numerics.h"
#include "harness/ir/graph.h"

namespace sdpa::cortex_m {

/// int8 numerics where the graph holds the quantized ops (the score and P
/// steps, arm_softmax_s8's error terms, and the int8 grids of q, k, v, P,
/// the scores and the output, each in units of the call's tensors); float
/// numerics otherwise. `histogram`: the activation observer is torch's
/// HistogramObserver, whose ranges clip tails by design.
KernelNumerics cmsis_numerics(const Case& c, const Graph& g, bool histogram);

}  // namespace sdpa::cortex_m
