#pragma once
/// torch.ao.quantization.HistogramObserver for one forward call and
/// calculate_qparams, per_tensor_affine int8 [-128, 127] (the Cortex-M
/// quantizer's activation observer, cortex-m-and-xnnpack.md §1.5), in the
/// float32 arithmetic of torch >= 2:
///  1. forward: infinities dropped; a NaN raises as torch.histc does; the
///     histogram is histc(x, 2048, min, max) (bin (x - min)·2048/(max - min),
///     truncated, the last bin closed);
///  2. _non_linear_param_search: the L2 search of caffe2's
///     NonlinearQuantizationParamsSearch, moving the start or end bin by
///     quantile steps of 1e-5 while _compute_quantization_error (256
///     destination bins) decreases;
///  3. _calculate_qparams(new_min, new_max): the range widened to hold 0,
///     scale = max((max - min) / 255, eps), zero_point = -128 -
///     round_half_even(min / scale), clamped.
/// Not bit-exact in one place: the error's sum over the 2048 bins is
/// rounded once from a double sum, where torch sums float32 in its own
/// order; only a near tie between two candidate ranges can tell them apart.
#include "harness/ir/tensor.h"

namespace sdpa::cortex_m {

/// The observer's qparams for the values of `x` (one calibration run).
/// Throws std::runtime_error naming torch.histc for a NaN.
QParams histogram_qparams(const Tensor& x);

}  // namespace sdpa::cortex_m
