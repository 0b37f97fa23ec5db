#pragma once
/// Runs a graph on a kernel set at one runtime size.
#include <map>
#include <string>
#include <vector>

#include "harness/ir/graph.h"
#include "harness/ir/kernel_set.h"

namespace sdpa {

struct Execution {
  std::vector<Tensor> outputs;
  /// values[i]: the outputs of node i (kept only when asked for).
  std::vector<std::vector<Tensor>> values;
};

/// Executes `g` with inputs bound to placeholders by name. Kernel errors
/// propagate as KernelError with the node named; a result whose shape or
/// dtype differs from the node's declaration raises GraphError.
Execution interpret(const Graph& g, const KernelSet& kernels,
                    const std::map<std::string, Tensor>& inputs, const RunContext& ctx,
                    bool keep_values = false);

class NodeMemo;

/// Same, reading node results from `memo` where a node of the same key ran
/// there, and giving it the results it computes (node_memo.h). The memo
/// must have been made for `kernels` at `ctx`; values are not kept.
Execution interpret(const Graph& g, const KernelSet& kernels,
                    const std::map<std::string, Tensor>& inputs, const RunContext& ctx,
                    NodeMemo& memo);

/// Same, binding placeholders by position (used for cond branches).
Execution interpret_positional(const Graph& g, const KernelSet& kernels,
                               const std::vector<const Tensor*>& inputs, const RunContext& ctx,
                               bool keep_values = false);

}  // namespace sdpa
