#include "backends/xnnpack/remove_noop_expand_copy_pass.h"

#include "backends/xnnpack/pattern_entry.h"

namespace sdpa::xnnpack {

bool is_noop_expand_copy(const Graph& g, const Node& n) {
  if (n.op != kExpandCopy || n.args.empty() || n.outputs.size() != 1) return false;
  const auto* input = std::get_if<ValueRef>(&n.args[0]);
  if (!input) return false;
  const ValueInfo& in = g.info(*input);
  const ValueInfo& out = n.outputs[0];
  // Upstream compares meta["val"] shapes: equal symbolic sizes, not sizes equal on a hint.
  return in.dtype == out.dtype && in.shape == out.shape;
}

Pass::Result RemoveNoopExpandCopyPass::run(const Graph& g, const ShapeEnv&, const RewriteControl&) const {
  Result result;
  GraphRewriter rw(g);
  for (const Node& n : g.nodes) {
    const bool any_expand = n.op == kExpandCopy && !n.args.empty() && std::holds_alternative<ValueRef>(n.args[0]);
    const bool removed = checked_ ? is_noop_expand_copy(g, n) : any_expand;
    if (removed)
      rw.replace(n, {rw.map(std::get<ValueRef>(n.args[0]))});
    else
      rw.copy(n);
  }
  result.graph = rw.finish();
  return result;
}

}  // namespace sdpa::xnnpack
