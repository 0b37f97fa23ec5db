#pragma once
/// Entry form `mha`: the graph export makes of torch.nn.MultiheadAttention
/// (batch_first, need_weights=False, no masks, embed dim D = H·E, kdim =
/// vdim = D) called on query, key and value of shape [batch..., L, D]:
///   q = linear(query, w_q, b_q) viewed [batch..., Lq, H, E], transposed to
///   [batch..., H, Lq, E] (k and v alike), SDPA(q, k, v) with no mask and the
///   default scale, transposed back, reshaped to [batch..., Lq, D], and
///   out = linear(., w_o, b_o).
/// Weights [D, D] and biases [D] are graph constants (get_attr) drawn from
/// the case's counter streams "w_q", "b_q", "w_k", "b_k", "w_v", "b_v",
/// "w_o", "b_o" under the case's distribution; the activations from the
/// streams "query", "key", "value".
#include <map>
#include <optional>
#include <string>

#include "backends/cortex_m/cortex_m_ops.h"
#include "harness/case/case.h"
#include "harness/ir/graph.h"

namespace sdpa::cortex_m {

/// Why the mha form cannot express case `c`, or none: it needs Hq == Hkv
/// without enable_gqa, E == Ev, static shapes, bhsd, no mask, not causal,
/// no dropout, and the default scale (the module has no scale argument).
std::optional<std::string> mha_refuses(const Case& c);
/// The projection parameter `name` ("w_q" [D, D], "b_q" [D], ...).
Tensor mha_parameter(const Case& c, const std::string& name);
Graph mha_entry_graph(const Case& c);
/// The runtime inputs "query", "key", "value" of the entry graph.
std::map<std::string, Tensor> mha_inputs(const Case& c);

}  // namespace sdpa::cortex_m
