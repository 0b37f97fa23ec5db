#include "backends/xnnpack/xnnpack_partition.h"

#include <numeric>

#include "backends/xnnpack/xnnpack_kernels.h"

namespace sdpa::xnnpack {

Delegates kernel_set_delegates() {
  return [](const Node& n) { return !n.outputs.empty() && runs_on_xnnpack(n.op, n.outputs[0].dtype); };
}

namespace {

int root(std::vector<int>& parent, int i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

}  // namespace

Partitions partition(const Graph& g, const Delegates& delegates) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<bool> taken(n, false);
  for (int i = 0; i < n; ++i) {
    const Node& node = g.nodes[i];
    taken[i] = node.op != "placeholder" && node.op != "get_attr" && delegates(node);
  }
  // Union of every delegated node with the delegated nodes it reads.
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  for (int i = 0; i < n; ++i) {
    if (!taken[i]) continue;
    auto join = [&](const Arg& a) {
      if (const auto* ref = std::get_if<ValueRef>(&a); ref && taken[ref->node])
        parent[root(parent, ref->node)] = root(parent, i);
    };
    for (const Arg& a : g.nodes[i].args) join(a);
    for (const auto& [key, a] : g.nodes[i].kwargs) join(a);
  }
  Partitions p;
  p.of_node.assign(n, -1);
  std::vector<int> id_of_root(n, -1);
  for (int i = 0; i < n; ++i) {
    if (!taken[i]) continue;
    int& id = id_of_root[root(parent, i)];
    if (id < 0) id = p.count++;
    p.of_node[i] = id;
  }
  return p;
}

}  // namespace sdpa::xnnpack
