#pragma once
/// How a kernel set computes attention for one case: the declaration the
/// accuracy bound derives from (ARCHITECTURE.md, "Accuracy": numerics belong
/// to the kernel set, not to the case dtype).
#include <functional>
#include <string>

#include "harness/ir/dtype.h"

namespace sdpa {

struct Case;
struct Graph;

/// Float attention: where each stage is rounded.
struct FloatNumerics {
  DType storage = DType::f32;       // inputs and output
  DType accumulation = DType::f32;  // dot products, softmax sums, P @ V
  DType operands = DType::f32;      // q and k after the scale is applied
  DType scores = DType::f32;        // the stored scores (f32 fused, the case dtype naive)
  DType probabilities = DType::f32; // P as it enters P @ V
  bool split_scale = false;         // sqrt(|scale|) multiplied into q and into k
};

/// One tensor's int8 grid as the graph quantizes it: its step and the range
/// it holds, [lo, hi] (an observer such as torch's HistogramObserver may
/// clip a tail). A step of 0: not read from the graph.
struct Int8Grid {
  double step = 0, lo = 0, hi = 0;
};

/// Int8 attention with requantization. The steps are what the case and the
/// graph hold: per-tensor symmetric q, k, v with scale max|x| / input_qmax
/// from the run's own data, logits requantized to a fixed-point grid of
/// `score_step`, P quantized to `prob_step`, the output to max|v| / output_qmax.
struct QuantizedNumerics {
  double input_qmax = 127;
  double score_step = 0;
  double prob_step = 0;
  double output_qmax = 127;
  double multiplier_rel = 0;  // relative error of a fixed-point requantization multiplier
  /// The softmax's own error beyond its logits': each weight is within
  /// (n + 2)·softmax_unit of it relatively (n kept keys) plus softmax_abs
  /// absolutely (in units of the row's largest weight, 1). A float softmax:
  /// the unit roundoff of the type exp and its sum are computed in, no
  /// absolute term; a fixed-point one: its row sum's step and its exp's.
  double softmax_unit = 0x1p-24;
  double softmax_abs = 0;
  /// The grids of q, k, v, P and the attention output where the graph
  /// declares them, and the narrowest the scores pass through. A grid only tightens
  /// the bound: a step is taken where it is finer than max|x| / qmax (the
  /// min/max step the numerics promise), and a range is read only where
  /// `ranges_clip` says the quantizer clips tails by design; otherwise each
  /// element is taken within half a step of its grid.
  Int8Grid q, k, v, prob, out, scores;
  /// The narrowest grid the scores pass through before a mask is added to
  /// them, in units of (q·k)·scale without the mask (step 0: none, or no
  /// mask on the path).
  Int8Grid unmasked_scores;
  /// The quantizer's observer may clip a tail (torch's HistogramObserver):
  /// an element past a grid's range is charged how far it falls outside.
  bool ranges_clip = false;
  /// The smallest step the quantizer gives (torch's observers floor their
  /// scale at f32's epsilon): max|x| / qmax is charged at least this.
  double step_floor = 0;
  /// The step of the int8 output the graph dequantizes last (0: none): the
  /// accuracy stage reports the end-to-end error in these steps (LSB).
  double output_step = 0;
};

struct KernelNumerics {
  enum class Kind { none, exact, floating, quantized };
  Kind kind = Kind::none;
  FloatNumerics fp;
  QuantizedNumerics quant;

  static KernelNumerics exact() { return {Kind::exact, {}, {}}; }
  static KernelNumerics floating(FloatNumerics f) { return {Kind::floating, f, {}}; }
  static KernelNumerics quantized(QuantizedNumerics q) { return {Kind::quantized, {}, q}; }
  /// A naive kernel in `dtype`: every stage stored in it, accumulation in
  /// accumulation_type(dtype), the scale applied once.
  static KernelNumerics naive(DType dtype) {
    if (!is_floating(dtype)) return {};
    DType acc = accumulation_type(dtype);
    return floating({dtype, acc, dtype, dtype, dtype, false});
  }
  /// Computes in accumulation_type(dtype) throughout and rounds only the
  /// output to `dtype` (an f32 upcast inside the graph, or a fused f32 kernel).
  static KernelNumerics upcast(DType dtype, bool split_scale) {
    if (!is_floating(dtype)) return {};
    DType acc = accumulation_type(dtype);
    return floating({dtype, acc, acc, acc, acc, split_scale});
  }
};

/// A kernel set's declaration: its numerics for a case, read from the case
/// and the graph the set runs (the rewritten one, or the entry graph when
/// the passes are off). Empty, or Kind::none: no numerics model.
using NumericsFn = std::function<KernelNumerics(const Case&, const Graph&)>;

}  // namespace sdpa
