// Models the exported llama attention step around the SDPA module
// (executorch main cff6f4dd32, examples/models/llama/attention.py: SDPA's
// repeat_interleave and F.scaled_dot_product_attention, the causal mask
// buffer narrowed at input_pos[0]).
#include "backends/llm/sdpa_custom_entry.h"

#include "backends/common/sdpa_entry.h"

namespace sdpa::llm {

std::optional<std::string> sdpa_custom_refuses(const Case& c) {
  if (c.layout != Layout::bhsd) return std::string("the SDPA module takes q, k, v as [B, H, S, D] (layout bhsd)");
  if (c.batch.size() != 1) return std::string("the SDPA module's tensors are 4-D: one batch dim");
  if (c.dtype != DType::f32 && c.dtype != DType::f16 && c.dtype != DType::bf16)
    return std::string("a llama model runs in f32, f16 or bf16");
  if (c.q_heads % c.kv_heads != 0) return std::string("n_heads must be a multiple of n_kv_heads (n_rep)");
  if (c.head_dim != c.value_dim) return std::string("k and v share the head dim");
  if (c.dropout_p != 0.0 || c.scale) return std::string("the SDPA module calls SDPA with dropout 0 and the default scale");
  if (c.start_pos.is_constant()) return std::string("start_pos is input_pos[0].item(): a symbol");
  if (!c.kv_len.is_constant()) return std::string("Lkv is the cache length, a constant");
  if (c.is_causal && c.causal_alignment != CausalAlignment::start_pos)
    return std::string("the causal mask is the buffer's rows at start_pos (alignment start-pos)");
  if (!c.is_causal && !c.mask) return std::string("the attention passes a mask: the causal rows, or its own");
  return std::nullopt;
}

namespace {

// tril(ones(n, n)), bool: AttentionMHA's causal mask buffer.
Tensor causal_buffer(int64_t n) {
  Tensor t(DType::b8, {n, n});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) t.data[i * n + j] = 1.0;
  return t;
}

}  // namespace

Graph sdpa_custom_entry_graph(const Case& c) {
  Graph g;
  const DType t = c.dtype;
  const SymExpr B = c.batch.at(0), Lq = c.q_len, Lkv = c.kv_len, sp = c.start_pos;
  const int64_t Hq = c.q_heads, Hkv = c.kv_heads, D = c.head_dim;
  ValueRef input_pos = g.placeholder(kInputPos, {DType::i64, {SymExpr(1)}});
  ValueRef pos = g.call(kSelectOp, {input_pos, int64_t{0}, int64_t{0}}, {}, {{DType::i64, {}}}, "select");
  // input_pos[0].item(): export binds the unbacked symbol start_pos to it.
  g.call(kItemOp, {pos}, {{"binds", sp}}, {{DType::i64, {}}}, "start_pos");
  ValueRef q = g.placeholder("q", {t, {B, Hq, Lq, D}});
  ValueRef k = g.placeholder("k", {t, {B, Hkv, Lkv, D}});
  ValueRef v = g.placeholder("v", {t, {B, Hkv, Lkv, D}});
  ValueRef mask;
  if (c.mask) {
    mask = g.placeholder("attn_mask", {c.mask->dtype, c.mask->shape});
  } else {
    ValueRef buffer = g.constant(kCausalMaskBuffer, causal_buffer(Lkv.constant()), {Lkv, Lkv});
    mask = g.call(kSliceOp, {buffer, int64_t{0}, sp, sp + Lq, int64_t{1}}, {}, {{DType::b8, {Lq, Lkv}}}, "attn_mask");
  }
  // The SDPA module.
  const int64_t n_rep = Hq / Hkv;
  ValueRef kr = g.call(kRepeatInterleaveOp, {k, n_rep, int64_t{1}}, {}, {{t, {B, Hq, Lkv, D}}}, "repeat_interleave");
  ValueRef vr = g.call(kRepeatInterleaveOp, {v, n_rep, int64_t{1}}, {}, {{t, {B, Hq, Lkv, D}}}, "repeat_interleave");
  ValueRef y = g.call(kSdpaOp, {q, kr, vr, mask, 0.0}, {}, {{t, {B, Hq, Lq, D}}}, "scaled_dot_product_attention");
  ValueRef yt = g.call("aten.transpose.int", {y, int64_t{1}, int64_t{2}}, {}, {{t, {B, Lq, Hq, D}}}, "transpose");
  ValueRef yc = g.call("aten.contiguous.default", {yt}, {}, {{t, {B, Lq, Hq, D}}}, "contiguous");
  ValueRef out = g.call("aten.view.default", {yc, SymShape{B, Lq, SymExpr(Hq * D)}}, {}, {{t, {B, Lq, SymExpr(Hq * D)}}}, "view");
  // The harness reads the module's output per head.
  ValueRef heads = g.call("aten.view.default", {out, SymShape{B, Lq, SymExpr(Hq), SymExpr(D)}}, {}, {{t, {B, Lq, Hq, D}}}, "read_heads");
  g.outputs = {g.call("aten.transpose.int", {heads, int64_t{1}, int64_t{2}}, {}, {{t, {B, Hq, Lq, D}}}, "read_output")};
  return g;
}

}  // namespace sdpa::llm
