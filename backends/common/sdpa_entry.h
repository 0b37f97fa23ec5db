#pragma once
/// The entry form export produces for a plain call: placeholders q, k, v
/// (and attn_mask) in the case layout, transposed to [..., H, L, D] when the
/// case is bshd, and one aten.scaled_dot_product_attention.default node.
#include "harness/case/case.h"
#include "harness/ir/graph.h"

namespace sdpa {

inline constexpr const char* kSdpaOp = "aten.scaled_dot_product_attention.default";

/// How the node passes attn_mask, dropout_p and is_causal: by position, as
/// torch.export writes them, or by keyword, as a graph pass that builds the
/// node with keywords would (each only where it differs from its default).
enum class CallForm { positional, keyword };

Graph sdpa_entry_graph(const Case& c, CallForm form = CallForm::positional);

/// The pieces of an aten SDPA node, read as export writes them:
/// (q, k, v, attn_mask, dropout_p, is_causal, *, scale, enable_gqa); a
/// keyword attn_mask, dropout_p or is_causal is not read.
struct SdpaCall {
  ValueRef q, k, v;
  std::optional<ValueRef> mask;
  double dropout_p = 0.0;
  bool is_causal = false;
  std::optional<double> scale;
  bool enable_gqa = false;
};
SdpaCall read_sdpa_call(const Node& n);

/// The same, bound as aten binds the schema: attn_mask, dropout_p and
/// is_causal by position or by keyword.
SdpaCall read_sdpa_call_bound(const Node& n);

}  // namespace sdpa
