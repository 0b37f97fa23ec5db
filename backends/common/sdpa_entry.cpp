#include "backends/common/sdpa_entry.h"

#include <stdexcept>

namespace sdpa {

Graph sdpa_entry_graph(const Case& c, CallForm form) {
  Graph g;
  DType input_dtype = c.dtype == DType::i8 ? DType::f32 : c.dtype;
  ValueRef q = g.placeholder("q", {input_dtype, query_shape(c)});
  ValueRef k = g.placeholder("k", {input_dtype, key_shape(c)});
  ValueRef v = g.placeholder("v", {input_dtype, value_shape(c)});
  std::optional<ValueRef> mask;
  if (c.mask) mask = g.placeholder("attn_mask", {c.mask->dtype, c.mask->shape});
  if (c.layout == Layout::bshd) {
    auto to_bhsd = [&](ValueRef x, const std::string& name) {
      SymShape s = g.info(x).shape;
      std::swap(s[s.size() - 3], s[s.size() - 2]);
      return g.call("aten.transpose.int", {x, int64_t{-3}, int64_t{-2}}, {}, {{input_dtype, s}},
                    name);
    };
    q = to_bhsd(q, "q_t");
    k = to_bhsd(k, "k_t");
    v = to_bhsd(v, "v_t");
  }
  std::vector<Arg> args{q, k, v, mask ? Arg(*mask) : Arg(None{}), c.dropout_p, c.is_causal};
  std::vector<std::pair<std::string, Arg>> kwargs;
  if (form == CallForm::keyword) {
    args.resize(3);
    if (mask) kwargs.emplace_back("attn_mask", *mask);
    if (c.dropout_p != 0.0) kwargs.emplace_back("dropout_p", c.dropout_p);
    if (c.is_causal) kwargs.emplace_back("is_causal", true);
  }
  if (c.scale) kwargs.emplace_back("scale", *c.scale);
  if (c.enable_gqa) kwargs.emplace_back("enable_gqa", true);
  ValueRef out = g.call(kSdpaOp, args, kwargs, {{input_dtype, output_shape(c)}},
                        "scaled_dot_product_attention");
  g.outputs = {out};
  return g;
}

SdpaCall read_sdpa_call(const Node& n) {
  SdpaCall call;
  auto ref = [&](size_t i) {
    if (i >= n.args.size() || !std::holds_alternative<ValueRef>(n.args[i]))
      throw std::invalid_argument("%" + n.name + ": argument " + std::to_string(i) + " is not a tensor");
    return std::get<ValueRef>(n.args[i]);
  };
  call.q = ref(0);
  call.k = ref(1);
  call.v = ref(2);
  if (n.args.size() > 3 && std::holds_alternative<ValueRef>(n.args[3])) call.mask = ref(3);
  if (n.args.size() > 4) call.dropout_p = std::get<double>(n.args[4]);
  if (n.args.size() > 5) call.is_causal = std::get<bool>(n.args[5]);
  if (const Arg* s = n.kwarg("scale"); s && std::holds_alternative<double>(*s)) call.scale = std::get<double>(*s);
  if (const Arg* e = n.kwarg("enable_gqa"); e && std::holds_alternative<bool>(*e)) call.enable_gqa = std::get<bool>(*e);
  return call;
}

SdpaCall read_sdpa_call_bound(const Node& n) {
  SdpaCall call = read_sdpa_call(n);
  size_t position = 3;
  for (const char* name : {"attn_mask", "dropout_p", "is_causal"}) {
    if (n.kwarg(name) && n.args.size() > position)  // as aten's binding raises
      throw std::invalid_argument("%" + n.name + ": scaled_dot_product_attention() got multiple values for "
                                  "argument '" + name + "'");
    ++position;
  }
  if (const Arg* m = n.kwarg("attn_mask"); m && std::holds_alternative<ValueRef>(*m)) call.mask = std::get<ValueRef>(*m);
  if (const Arg* d = n.kwarg("dropout_p"); d && std::holds_alternative<double>(*d)) call.dropout_p = std::get<double>(*d);
  if (const Arg* c = n.kwarg("is_causal"); c && std::holds_alternative<bool>(*c)) call.is_causal = std::get<bool>(*c);
  return call;
}

}  // namespace sdpa
