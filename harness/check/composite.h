#pragma once
/// A module around one SDPA call (an attention module: projections in, the
/// call, a projection out). The oracles know only SDPA: a target whose entry
/// form is such a module tells the harness the inner call's inputs and how
/// the call's golden and error bound become the module's.
#include <functional>
#include <vector>

#include "harness/case/tensor_data.h"
#include "harness/check/reference.h"
#include "harness/ir/graph.h"

namespace sdpa {

struct Composite {
  /// q, k, v (and mask) of the inner call at one run: the module's inputs
  /// through its exact in-projection, in the case's shapes.
  std::function<CaseTensors(const Assignment& at)> sdpa_tensors;
  /// The module's exact output from the inner call's output [batch..., Hq, Lq, Ev].
  std::function<Tensor(const Tensor& sdpa_out)> output;
  /// A bound per output row of the module (its shape without the last dim)
  /// from the inner call's bound per query row, carried through what follows
  /// the call, plus the error the projections add as `g` (the graph the
  /// kernel set runs) computes them. `t` and `sdpa_golden`: the inner call's.
  std::function<ErrorBound(const ErrorBound& sdpa, const CaseTensors& t, const Golden& sdpa_golden, const Graph& g)>
      bound;
  /// The magnitude the module computes with (for an out-projection at least
  /// max_o Σ_c |w_oc|·max|v| + max|b|), given the inner call's tensors: the
  /// exact comparisons are relative to it, as an output may cancel to near 0.
  std::function<double(const CaseTensors& t)> scale;
  /// The query rows of [batch..., Hq, Lq] that output row `row` reads.
  std::function<std::vector<int64_t>(int64_t row)> rows_of;
};

/// The module's golden from the inner call's: the output through
/// m.output; an output row is fully masked when every query row it reads
/// is, and its largest score is theirs.
Golden composite_golden(const Composite& m, const Golden& sdpa);

}  // namespace sdpa
