#pragma once
/// The structural properties of the graph the Cortex-M pipeline leaves
/// (issue 10, semantics/passes.md §1), each violation in words:
///  - no SDPA left where DecomposeSDPAPass's guard accepts the call, and a kept
///    (rejected) call leaves the whole graph unchanged;
///  - after a decomposition: exactly two bmm and one softmax; one scale MUL
///    (decompose), two scalar MULs (shared-decomp); decompose+fold: none, or
///    one the fold's rules reject (it must fold a positive scale whose
///    qparams are proportional);
///  - around the scale MUL, for a positive scale: out_scale == in_scale·scale
///    within 1e-6 relative, and equal zero points (where neither scale is the
///    observer's eps floor);
///  - dtypes consistent at every node: cortex_m ops read and write int8 with
///    qparams (quantize reads f32, dequantize writes f32), aten compute ops
///    read and write f32, view ops keep their input's dtype and qparams;
///  - each int8 stage within its stage reference (stage_reference.h), when the
///    lowered graph runs on `kernels` with `inputs`: a stage whose kernel
///    departs from its own arguments is a kernel breach (inaccurate-kernel);
///    one whose arguments depart from the scales is structural.
#include <map>
#include <string>
#include <vector>

#include "backends/cortex_m/decompose_sdpa_pass.h"

namespace sdpa::cortex_m {

struct InvariantContext {
  const DecomposeSdpaPass& pass;
  Policy policy;
  bool quantized;  // the quantizer and lowering ran
  const KernelSet& kernels;
  std::map<std::string, Tensor> inputs;  // the case's run, for the stage reference
};

Violations cortex_m_invariants(const InvariantContext& ctx, const Case& c, const Graph& before, const Graph& after);

}  // namespace sdpa::cortex_m
