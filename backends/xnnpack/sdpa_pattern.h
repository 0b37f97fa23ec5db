#pragma once
/// The XNNPACK partitioner's SDPA pattern graph (partition/graphs/sdpa.py,
/// semantics/cortex-m-and-xnnpack.md §3.1) and a matcher for it, as
/// torch.fx's SubgraphMatcher(ignore_literals=True) finds it: the same ops
/// wired the same way, any literal, the pattern's placeholders (q, k, v,
/// mask) bound to any value, no interior node read from outside the match.
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
