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
  DType softmax = DType::f32; // the float type exp and its sum are computed in
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
