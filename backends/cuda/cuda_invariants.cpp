#include "backends/cuda/cuda_invariants.h"

#include "backends/common/sdpa_entry.h"
#include "backends/cuda/fused_entry.h"

namespace sdpa::cuda {
namespace {

void check_replacement(const Node& fused, const Graph& before, const Node& sdpa, const std::string& where,
                       const ShapeEnv& env, std::vector<std::string>& out) {
  const FusedCall call = read_fused_call(fused);
  const SymShape &q = before.info(call.q).shape, &k = before.info(call.k).shape;
  const bool equal_heads = env.statically_known(Fact{q[q.size() - 3], Rel::eq, k[k.size() - 3]});
  const SdpaCall s = read_sdpa_call(sdpa);
  if (s.enable_gqa == equal_heads)
    out.push_back(where + "%" + sdpa.name + ": enable_gqa " + (s.enable_gqa ? "set" : "unset") + " with Hq " +
                  q[q.size() - 3].str() + " and Hkv " + k[k.size() - 3].str());
  if (s.scale != call.scale)
    out.push_back(where + "%" + sdpa.name + ": scale " + (s.scale ? std::to_string(*s.scale) : "None") +
                  ", the fused call had " + (call.scale ? std::to_string(*call.scale) : "None"));
}

// The node of `after` that `reader` of `before` became reads output > 0 of a fused node.
bool still_reads_lse(const Node& reader, const Graph& after) {
  int i = after.find(reader.name);
  if (i < 0) return false;
  for (const Arg& a : after.nodes[i].args)
    if (const ValueRef* r = std::get_if<ValueRef>(&a); r && r->output > 0 && is_fused_op(after.nodes[r->node].op))
      return true;
  return false;
}

// The invariants on one graph and, branch by branch, on the conds in it;
// `where` names the branch ("%cond/true_branch/"), empty at the top level.
void check_graph(const ReplaceFusedSdpaWithSdpaPass& pass, const ShapeEnv& env, const Graph& before,
                 const Graph& after, const std::string& where, std::vector<std::string>& out) {
  for (int i = 0; i < static_cast<int>(before.nodes.size()); ++i) {
    const Node& n = before.nodes[i];
    const int kept = after.find(n.name);
    if (!n.subgraphs.empty()) {
      if (kept < 0 || after.nodes[kept].subgraphs.size() != n.subgraphs.size()) {
        out.push_back(where + "%" + n.name + " (" + n.op + ") lost its branches in the rewrite");
        continue;
      }
      for (size_t b = 0; b < n.subgraphs.size(); ++b)
        check_graph(pass, env, *n.subgraphs[b], *after.nodes[kept].subgraphs[b], branch_prefix(where, n, b), out);
      continue;
    }
    if (!is_fused_op(n.op)) continue;
    const bool still_fused = kept >= 0 && after.nodes[kept].op == n.op;
    if (still_fused && pass.guard(before, i, env, where).rewrite)
      out.push_back(where + "%" + n.name + " (" + n.op + ") is left although the guard accepted it");
    if (int r = after.find(replacement_name(n.name)); r >= 0 && after.nodes[r].op == kSdpaOp)
      check_replacement(n, before, after.nodes[r], where, env, out);
    for (int reader : readers_of_extra_outputs(before, i)) {
      if (reader < 0) continue;
      if (!still_reads_lse(before.nodes[reader], after))
        out.push_back(where + "%" + before.nodes[reader].name + " read the logsumexp of %" + n.name +
                      ", which no fused node provides after the rewrite");
    }
  }
}

}  // namespace

std::vector<std::string> fused_rewrite_invariants(const ReplaceFusedSdpaWithSdpaPass& pass, const ShapeEnv& env,
                                                  const Graph& before, const Graph& after) {
  std::vector<std::string> out;
  check_graph(pass, env, before, after, "", out);
  return out;
}

}  // namespace sdpa::cuda
