#pragma once
/// The XNNPACK partitioner's SDPA pattern graph (partition/graphs/sdpa.py,
/// semantics/cortex-m-and-xnnpack.md §3.1) and a matcher for it, as
/// torch.fx's SubgraphMatcher(ignore_literals=True) finds it: the same ops
/// wired the same way, any literal, the pattern's placeholders (q, k, v,
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
  std::vector<int> scalar_muls;       ///< the mul.Scalar nodes, in the pattern's order (q's, then k's)
  std::vector<int> nodes;             ///< every matched node but the placeholders
};

/// The pattern in words, for decisions and reports.
const char* sdpa_pattern_description();

/// Every match in `g`, in node order of their outputs; matches never overlap.
std::vector<SdpaPatternMatch> match_sdpa_pattern(const Graph& g);

}  // namespace sdpa::xnnpack
