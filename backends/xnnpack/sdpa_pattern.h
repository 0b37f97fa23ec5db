#pragma once
/// The XNNPACK partitioner's SDPA pattern graph (partition/graphs/sdpa.py,
/// semantics/cortex-m-and-xnnpack.md §3.1) and a matcher for it, as
/// torch.fx's SubgraphMatcher(ignore_literals=True) finds it: the same ops
/// wired the same way, any literal, but lists (dims, sizes) of the traced
/// rank-4 graph's lengths, the pattern's placeholders (q, k, v,
/// mask) bound to any value, no interior node read from outside the match.
/// The softmax is _safe_softmax or its edge decomposition: the pattern
/// graphs are traced by the same PyTorch as the model, so a graph holds
/// one form and the pattern the same one (semantics §3.1, UNVERIFIED which).
#include <string>
#include <vector>

#include "harness/ir/graph.h"

namespace sdpa::xnnpack {

/// The nodes of one match, as indices into Graph::nodes.
struct SdpaPatternMatch {
  int output = -1;                    ///< the view_copy the pattern returns
  ValueRef q, k, v, mask;             ///< what the pattern's placeholders bind
  std::vector<int> scale_muls;        ///< the scale MULs, in the pattern's order (q's, then k's)
  bool lifted = false;                ///< the MULs are mul.Tensor (of a get_attr constant each, or a literal)
  std::vector<int> nodes;             ///< every matched node but the placeholders
};

/// Which copies of the pattern graphs are matched.
enum class PatternForms {
  /// The traced graphs: each scale MUL a mul.Scalar of a literal (ExecuTorch main).
  scalar,
  /// Those, then their copies run through LiftConstantScalarOperandsPass:
  /// each scale MUL a mul.Tensor of a get_attr constant of its own, any
  /// tensor (SubgraphMatcher compares get_attr tensors by type only), or of
  /// a literal (ignore_literals). PR #20515 at 257ef3a853 matches both
  /// (convert_to_sdpa.py).
  scalar_and_lifted,
};

/// The pattern in words, for decisions and reports.
const char* sdpa_pattern_description();

/// Every match in `g`, in node order of their outputs; matches never overlap.
std::vector<SdpaPatternMatch> match_sdpa_pattern(const Graph& g, PatternForms forms = PatternForms::scalar);

}  // namespace sdpa::xnnpack
