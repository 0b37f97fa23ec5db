#pragma once
/// The CortexMQuantizer's per-tensor int8 annotation, calibrated on the case's
/// own tensors, followed by AtenToCortexMPass's lowering (semantics/
/// cortex-m-and-xnnpack.md §1.5, §1.7), as one pass from the float graph
/// MatmulToBmmPass leaves to the lowered graph of cortex_m ops:
/// - aten.bmm (both operands rank 3, equal batch, matching inner dims) becomes
///   cortex_m.quantized_batch_matmul on a cortex_m.transpose of its rhs;
/// - the scale MUL (aten.mul.Scalar on an int8 score tensor) becomes
///   cortex_m.quantized_mul with its scalar materialized as an int8 constant
///   of the MUL's shape (MulCheck::annotate; [1, ..., 1] under rank_matched), or stays an fp32 MUL between dequantize and
///   quantize where CortexMAddMulCheck rejects its operands
///   (MulCheck::upstream); with `fold`, either is folded into the preceding
///   requantization (FoldScaleIntoQuantizePass, §1.4) when its qparams are
///   proportional;
/// - aten._softmax / softmax.int over the last dim becomes cortex_m.softmax,
///   its output fixed at (1/256, -128); with the upstream check, a 4-D input
///   that "is channels-last" (shape[1] == 1, or shape[2] == shape[3] == 1) is
///   rejected and stays fp32 (CortexMSoftmaxCheck's quirk);
/// - aten.linear, where config.linear annotates it: int8 input (its observer's
///   qparams), a symmetric int8 weight constant (scale max|w|/127, zp 0), an
///   int32 bias constant (scale S_in·S_w); with int8_meta lowered to
///   cortex_m.quantized_linear (arm_fully_connected_s8), with retraced_int32
///   kept as the folded aten.linear with the qparams as kwargs and an int32
///   output (the retrace fails before the lowering);
/// - view ops on int8 values share their input's qparams (SharedQspecQuantizer);
/// - a float op reading an int8 value reads it through
///   cortex_m.dequantize_per_tensor, a quantized op reading a float value
///   through cortex_m.quantize_per_tensor.
/// Every activation qparam comes from the configured observer over the
/// calibration run (calibration.h); multiplier and shift from
/// quantize_multiplier_aot. A
/// float graph that cannot run on its example inputs (a broken rewrite before
/// it) is left as it is: nothing can be calibrated.
#include "harness/check/target.h"

namespace sdpa::cortex_m {

/// How the lowering treats aten.linear (the mha entry form's projections):
///  not_annotated   left fp32 (the pattern table of this model has no linear);
///  retraced_int32  annotated int8 and folded by FoldAndAnnotateQParamsPass,
///                  whose retrace reruns the aten fake kernel: int8 x int8 with
///                  an int32 bias gives an int32 output meta (§1.6, #21943);
///  int8_meta       the same fold with an int8 output meta (§1.6's fix).
enum class LinearMeta { not_annotated, retraced_int32, int8_meta };

/// Whether the scale MUL is annotated:
///  annotate  always, as int8 (semantics/passes.md §1's design);
///  upstream  as CortexMQuantizer does (§1.5): ReplaceScalarWithTensorArgPass
///            turns aten.mul.Scalar(x, c) into mul.Tensor(x, full((1,), c)),
///            and CortexMAddMulCheck rejects the rank-1 operand on any score
///            tensor (add_mul_check_accepts);
///  rank_matched  as CortexMQuantizer does with upstream's own
///            DecomposeSDPAPass (@6864d717), whose Python-scalar mul.Tensor
///            ScalarsToAttributePass turns into a (1,)*R buffer: taken as a
///            channel broadcast (one head, 4-D) or an equal shape (all
///            sizes 1), rejected otherwise.
enum class MulCheck { annotate, upstream, rank_matched };

/// The activation observer: torch's MinMaxObserver in double (calibration.h),
/// or HistogramObserver in float32 (histogram_observer.h), the CortexMQuantizer's.
enum class Observer { minmax, histogram };

/// CortexMAddMulCheck on a two-input add/mul (pattern_checkers.py): equal
/// shapes, or is_channel_broadcast(t1, t2) and is_channels_last(t1), where
/// is_channels_last holds for a 4-D shape with shape[1] == 1 or shape[2] ==
/// shape[3] == 1 (the default dim order of these graphs, passes_utils.py)
/// and is_channel_broadcast needs equal ranks, both channels-last, equal
/// size(1) and one operand whose numel is its size(1).
bool add_mul_check_accepts(const SymShape& t1, const SymShape& t2);

struct QuantizerConfig {
  bool fold = false;                    // decompose+fold
  bool upstream_softmax_check = true;   // the channels-last quirk of CortexMSoftmaxCheck
  bool observer_before_mul = false;     // mutant: the MUL's output observer reads its input
  /// The scale MUL's output qparams derived from its input's, S_in·c and
  /// Z_in, for c > 0 (the derivation #22796 proposes); else observed.
  bool derive_mul_output = false;
  LinearMeta linear = LinearMeta::not_annotated;
  MulCheck mul_check = MulCheck::annotate;
  Observer observer = Observer::minmax;
  /// MaterializeMulBroadcastPass: the annotated scale MUL's constant is
  /// materialized at the MUL's shape (false: the mutant whose lowering hands
  /// quantized_mul a rank-matched [1, ..., 1] constant on every score tensor,
  /// which the runtime aborts on unless it is a channel broadcast).
  bool materialize_mul_broadcast = true;
};

/// The retrace's type errors in a lowered graph: each bmm (aten or
/// cortex_m.quantized_batch_matmul) whose two operands differ in dtype, as
/// aten's bmm fake kernel reports it ("expected scalar type torch.int8 but
/// found torch.int32"), naming the bmm and each operand's producer (traced
/// back through view ops and transposes).
std::vector<std::string> retrace_type_errors(const Graph& g);

/// Whether the CortexMSoftmaxCheck (with or without its quirk) annotates softmax node `n` of `g`.
bool softmax_annotated(const Graph& g, const Node& n, bool upstream_check);

class QuantizeLowerPass : public Pass {
 public:
  explicit QuantizeLowerPass(QuantizerConfig config) : config_(config) {}
  std::string name() const override { return "cortex-m-quantize-lower"; }
  using Pass::run;
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override;

 private:
  QuantizerConfig config_;
};

}  // namespace sdpa::cortex_m
