// Models the aten graph torch.export makes of nn.MultiheadAttention's
// forward with need_weights=False (semantics/passes.md §1, "known composite";
// cortex-m-and-xnnpack.md §1.6: aten.linear is preserved through to_edge).
#include "backends/cortex_m/mha_entry.h"

#include <stdexcept>

#include "backends/common/sdpa_entry.h"
#include "harness/case/tensor_data.h"

namespace sdpa::cortex_m {
namespace {

int64_t embed_dim(const Case& c) { return c.q_heads * c.head_dim; }

Shape concrete(const SymShape& s) {
  Shape out;
  for (const auto& d : s) out.push_back(d.constant());
  return out;
}

// [batch..., L, D]
SymShape activation_shape(const Case& c, const SymExpr& len) {
  SymShape s = c.batch;
  s.push_back(len);
  s.push_back(embed_dim(c));
  return s;
}

}  // namespace

std::optional<std::string> mha_refuses(const Case& c) {
  if (c.q_heads != c.kv_heads || c.enable_gqa) return std::string("nn.MultiheadAttention has one head count");
  if (c.head_dim != c.value_dim) return std::string("nn.MultiheadAttention's heads have E == Ev");
  if (!c.symbols.empty()) return std::string("the mha entry form has static shapes");
  if (c.layout != Layout::bhsd) return std::string("the mha entry form projects [batch..., L, D] inputs (bhsd only)");
  if (c.mask) return std::string("the mha entry form passes no mask");
  if (c.is_causal) return std::string("the mha entry form is not causal");
  if (c.dropout_p != 0.0) return std::string("the mha entry form has dropout 0");
  if (c.scale) return std::string("nn.MultiheadAttention has no scale argument");
  return std::nullopt;
}

Tensor mha_parameter(const Case& c, const std::string& name) {
  const int64_t d = embed_dim(c);
  const bool weight = name.rfind("w_", 0) == 0;
  return make_input(c, name, weight ? Shape{d, d} : Shape{d});
}

Graph mha_entry_graph(const Case& c) {
  if (auto why = mha_refuses(c)) throw std::invalid_argument("mha entry: " + *why);
  Graph g;
  const int64_t d = embed_dim(c);
  const DType t = DType::f32;
  auto linear = [&](ValueRef x, const std::string& w, const std::string& b, const std::string& name) {
    const ValueRef wv = g.constant(w, mha_parameter(c, w), {d, d});
    const ValueRef bv = g.constant(b, mha_parameter(c, b), {d});
    return g.call(kLinearOp, {x, wv, bv}, {}, {{t, g.info(x).shape}}, name);
  };
  // [batch..., L, D] -> [batch..., L, H, E] -> [batch..., H, L, E]
  auto heads = [&](ValueRef x, const SymExpr& len, const std::string& name) {
    SymShape split = c.batch, bhle = c.batch;
    split.insert(split.end(), {len, c.q_heads, c.head_dim});
    bhle.insert(bhle.end(), {c.q_heads, len, c.head_dim});
    const ValueRef v = g.call("aten.view.default", {x, split}, {}, {{t, split}}, name + "_view");
    return g.call("aten.transpose.int", {v, int64_t{-3}, int64_t{-2}}, {}, {{t, bhle}}, name + "_heads");
  };
  const ValueRef query = g.placeholder("query", {t, activation_shape(c, c.q_len)});
  const ValueRef key = g.placeholder("key", {t, activation_shape(c, c.kv_len)});
  const ValueRef value = g.placeholder("value", {t, activation_shape(c, c.kv_len)});
  const ValueRef q = heads(linear(query, "w_q", "b_q", "in_proj_q"), c.q_len, "q");
  const ValueRef k = heads(linear(key, "w_k", "b_k", "in_proj_k"), c.kv_len, "k");
  const ValueRef v = heads(linear(value, "w_v", "b_v", "in_proj_v"), c.kv_len, "v");
  const SymShape bhle = output_shape(c);
  const ValueRef attn = g.call(kSdpaOp, {q, k, v, None{}, 0.0, false}, {}, {{t, bhle}}, "scaled_dot_product_attention");
  SymShape blhe = c.batch;
  blhe.insert(blhe.end(), {c.q_len, c.q_heads, c.head_dim});
  const ValueRef back = g.call("aten.transpose.int", {attn, int64_t{-3}, int64_t{-2}}, {}, {{t, blhe}}, "attn_t");
  const ValueRef merged =
      g.call("aten.reshape.default", {back, activation_shape(c, c.q_len)}, {}, {{t, activation_shape(c, c.q_len)}},
             "attn_merged");
  g.outputs = {linear(merged, "w_o", "b_o", "out_proj")};
  return g;
}

std::map<std::string, Tensor> mha_inputs(const Case& c) {
  std::map<std::string, Tensor> in;
  in["query"] = make_input(c, "query", concrete(activation_shape(c, c.q_len)));
  in["key"] = make_input(c, "key", concrete(activation_shape(c, c.kv_len)));
  in["value"] = make_input(c, "value", concrete(activation_shape(c, c.kv_len)));
  return in;
}

}  // namespace sdpa::cortex_m
