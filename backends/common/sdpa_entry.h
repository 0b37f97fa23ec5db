#pragma once
/// The entry form export produces for a plain call: placeholders q, k, v
/// (and attn_mask) in the case layout, transposed to [..., H, L, D] when the
/// case is bshd, and one aten.scaled_dot_product_attention.default node.
#include "harness/case/case.h"
#include "harness/ir/graph.h"

namespace sdpa {

inline constexpr const char* kSdpaOp = "aten.scaled_dot_product_attention.default";

Graph sdpa_entry_graph(const Case& c);

/// The pieces of an aten SDPA node, read as export writes them:
/// (q, k, v, attn_mask, dropout_p, is_causal, *, scale, enable_gqa).
struct SdpaCall {
  ValueRef q, k, v;
  std::optional<ValueRef> mask;
  double dropout_p = 0.0;
  bool is_causal = false;
  std::optional<double> scale;
  bool enable_gqa = false;
};
SdpaCall read_sdpa_call(const Node& n);

}  // namespace sdpa
