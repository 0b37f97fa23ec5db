#pragma once
/// The delegated subgraphs of a graph, as the XNNPACK partitioner leaves
/// them: each connected set of nodes the partitioner takes is one delegate,
/// and the preprocess passes (ConvertToSDPAPass among them) run on each
/// delegate alone (semantics/cortex-m-and-xnnpack.md §3.2).
#include <functional>
#include <vector>

#include "harness/ir/graph.h"

namespace sdpa::xnnpack {

/// Whether the partitioner takes node `n` (placeholders and constants are never asked).
using Delegates = std::function<bool(const Node& n)>;

/// The nodes the `xnnpack` kernel set runs on XNNPACK (runs_on_xnnpack):
/// mul.Scalar is not among them, as it has no partitioner config upstream.
Delegates kernel_set_delegates();

struct Partitions {
  std::vector<int> of_node;  ///< the delegate of each node, -1 when it is not delegated
  int count = 0;
};

/// Connected sets of delegated nodes, numbered in node order of their first node.
Partitions partition(const Graph& g, const Delegates& delegates);

}  // namespace sdpa::xnnpack
