#pragma once
/// Static checks on a graph before it runs: references, names, constants,
/// and the dtype rules of each op (an int8 operand meeting an int32 one in a
/// bmm is a type error, reported with the node's name).
#include <string>
#include <vector>

#include "harness/ir/graph.h"

namespace sdpa {

/// Every problem found, each naming the node: empty when the graph verifies.
std::vector<std::string> verify_graph(const Graph& g);

}  // namespace sdpa
