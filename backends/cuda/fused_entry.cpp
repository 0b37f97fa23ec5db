#include "backends/cuda/fused_entry.h"

#include <limits>
#include <memory>
#include <stdexcept>

#include "backends/common/sdpa_entry.h"

namespace sdpa::cuda {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// convert_boolean_attn_mask_cudnn: False -> -65504 (the "cuDNN -inf issue" workaround, §3.2).
constexpr double kCudnnFill = -65504.0;

bool known(const Case& c, const SymExpr& a, Rel rel, const SymExpr& b) {
  return c.shape_env().statically_known(Fact{a, rel, b});
}

bool half_precision(DType t) { return t == DType::f16 || t == DType::bf16; }

// check_batch_size_and_num_heads_dense<allow_gqa>: equal heads, or enable_gqa with Hq % Hkv == 0.
bool heads_ok(const Case& c, bool allow_gqa) {
  if (c.q_heads == c.kv_heads) return true;
  return allow_gqa && c.enable_gqa && c.q_heads % c.kv_heads == 0;
}

bool four_d(const Case& c) { return c.batch.size() == 1; }

// check_nonzero_sequence_lengths_dense: Lq and Lkv at least 1 at every size.
bool nonzero_lengths(const Case& c) {
  return known(c, c.q_len, Rel::ge, SymExpr(1)) && known(c, c.kv_len, Rel::ge, SymExpr(1));
}

bool flash_takes(const Case& c) {
  return four_d(c) && !c.mask && half_precision(c.dtype) && c.head_dim == c.value_dim && nonzero_lengths(c) &&
         c.head_dim <= 256 && heads_ok(c, true) &&
         (!c.is_causal || known(c, c.q_len, Rel::eq, c.kv_len));  // check_flash_causal_non_square_seqlens
}

bool efficient_takes(const Case& c) {
  if (!four_d(c) || !(c.dtype == DType::f32 || half_precision(c.dtype))) return false;
  const int64_t align = c.dtype == DType::f32 ? 4 : 8;  // the GEMM alignment on sm >= 80
  return c.head_dim % align == 0 && c.value_dim % align == 0 && heads_ok(c, false) && nonzero_lengths(c);
}

// check_attn_mask_shape: a 2-D [Lq|1, Lkv|1] or 4-D [B|1, H|1, Lq|1, Lkv|1] mask.
bool cudnn_mask_ok(const Case& c) { return !c.mask || c.mask->shape.size() == 2 || c.mask->shape.size() == 4; }

// check_cudnn_tensor_shapes (D, Dv <= 128, or 256 on sm90 with cuDNN >=
// 9.10; multiples of 8; Lkv != 1; no dropout at Lq == 1), check_cudnn_dropout
// (none on cuDNN 9.11 to 9.13), the dense checks (GQA allowed, non-zero lengths).
bool cudnn_takes(const Case& c, Priority order) {
  const int64_t max_dim = order == Priority::cudnn_first ? 128 : 256;
  auto dim_ok = [max_dim](int64_t d) { return d <= max_dim && d % 8 == 0; };
  const bool dropout_ok = c.dropout_p == 0.0 || (order != Priority::cudnn_first_sm90_9_11 &&
                                                 known(c, c.q_len, Rel::ne, SymExpr(1)));
  return four_d(c) && half_precision(c.dtype) && dim_ok(c.head_dim) && dim_ok(c.value_dim) &&
         heads_ok(c, true) && cudnn_mask_ok(c) && known(c, c.kv_len, Rel::ne, SymExpr(1)) && dropout_ok &&
         nonzero_lengths(c);
}

SymShape lse_shape(const Case& c, Variant v, bool computed) {
  SymShape s = output_shape(c);
  s.pop_back();  // [batch..., Hq, Lq]
  if (!computed) s.back() = SymExpr(0);
  if (v == Variant::cudnn) s.push_back(SymExpr(1));
  return s;
}

// A bool mask reaches efficient as -inf/0 and cuDNN as -65504/0 (§3.2); a
// float mask passes unchanged.
std::optional<ValueRef> bias_of(Graph& g, const Case& c, Variant v) {
  if (!c.mask) return std::nullopt;
  ValueRef m = g.placeholder("attn_mask", {c.mask->dtype, c.mask->shape});
  if (c.mask->dtype != DType::b8) return m;
  double fill = v == Variant::cudnn ? kCudnnFill : -kInf;
  return g.call("aten.where.Scalar", {m, 0.0, fill}, {}, {{c.dtype, c.mask->shape}}, "attn_bias");
}

ValueRef fused_node(Graph& g, const Case& c, Variant v, ValueRef q, ValueRef k, ValueRef val,
                    std::optional<ValueRef> bias, bool causal, bool lse) {
  std::vector<std::pair<std::string, Arg>> kwargs;
  if (c.scale) kwargs.emplace_back("scale", *c.scale);
  const ValueInfo out{c.dtype, output_shape(c)};
  const Arg b = bias ? Arg(*bias) : Arg(None{});
  switch (v) {
    case Variant::flash:  // (q, k, v, dropout_p, is_causal, return_debug_mask, *, scale)
      return g.call(kFlashOp, {q, k, val, c.dropout_p, causal, false}, kwargs,
                    {out, {DType::f32, lse_shape(c, v, true)}});
    case Variant::efficient:  // (q, k, v, attn_bias, compute_log_sumexp, dropout_p, is_causal, *, scale)
      return g.call(kEfficientOp, {q, k, val, b, lse, c.dropout_p, causal}, kwargs,
                    {out, {DType::f32, lse_shape(c, v, lse)}});
    case Variant::cudnn:  // (..., is_causal, return_debug_mask, *, scale)
      return g.call(kCudnnOp, {q, k, val, b, lse, c.dropout_p, causal, false}, kwargs,
                    {out, {DType::f32, lse_shape(c, v, lse)}});
    case Variant::sdpa: break;
  }
  throw std::logic_error("fused_node: aten SDPA is not a fused variant");
}

// output + zeros_like(lse): a node that reads logsumexp and adds exactly 0.
// (0 * lse would be NaN on a fully masked row, where lse is -inf and the
// oracles give 0.)
ValueRef read_lse(Graph& g, const Case& c, ValueRef out, ValueRef lse) {
  SymShape zeros_shape = g.info(lse).shape;
  ValueRef z = g.call("aten.zeros_like.default", {lse}, {{"dtype", c.dtype}}, {{c.dtype, zeros_shape}},
                      "lse_zeros");
  if (zeros_shape.size() + 1 == output_shape(c).size()) {
    zeros_shape.push_back(SymExpr(1));
    z = g.call("aten.unsqueeze.default", {z, int64_t{-1}}, {}, {{c.dtype, zeros_shape}});
  }
  return g.call("aten.add.Tensor", {out, z}, {}, {{c.dtype, output_shape(c)}}, "output");
}

}  // namespace

std::optional<EntryForm> parse_entry(const std::string& s) {
  if (s == "flash") return EntryForm::flash;
  if (s == "efficient") return EntryForm::efficient;
  if (s == "cudnn") return EntryForm::cudnn;
  if (s == "dispatch") return EntryForm::dispatch;
  return std::nullopt;
}

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::flash: return "flash";
    case Variant::efficient: return "efficient";
    case Variant::cudnn: return "cudnn";
    case Variant::sdpa: return "sdpa";
  }
  return "?";
}

bool is_fused_op(const std::string& op) { return op == kFlashOp || op == kEfficientOp || op == kCudnnOp; }

std::optional<Priority> parse_priority(const std::string& s) {
  if (s == "default") return Priority::default_order;
  if (s == "cudnn-first") return Priority::cudnn_first;
  if (s == "cudnn-first-sm90-9.10") return Priority::cudnn_first_sm90_9_10;
  if (s == "cudnn-first-sm90-9.11") return Priority::cudnn_first_sm90_9_11;
  return std::nullopt;
}

// Math, third in the default order, takes every call: cuDNN after it is
// never chosen, and a call neither flash nor efficient takes stays aten SDPA.
Variant dispatch_variant(const Case& c, Priority order) {
  if (order != Priority::default_order && cudnn_takes(c, order)) return Variant::cudnn;
  if (flash_takes(c)) return Variant::flash;
  if (efficient_takes(c)) return Variant::efficient;
  return Variant::sdpa;
}

Variant entry_variant(EntryForm e, const Case& c, Priority order) {
  switch (e) {
    case EntryForm::flash: return Variant::flash;
    case EntryForm::efficient: return Variant::efficient;
    case EntryForm::cudnn: return Variant::cudnn;
    case EntryForm::dispatch: return dispatch_variant(c, order);
  }
  return Variant::sdpa;
}

// A direct call is the op as export hands it: its schema's limits, not the
// dispatcher's size and alignment checks.
std::optional<std::string> entry_refuses(EntryForm e, const Case& c) {
  if (e == EntryForm::dispatch) return std::nullopt;
  if (!four_d(c)) return std::string("a fused SDPA op takes 4-D [B, H, L, D] q, k, v");
  if (e == EntryForm::flash && c.mask) return std::string("_scaled_dot_product_flash_attention takes no mask");
  // The dispatcher hands flash only equal q, k, v head dims up to 256 (§3.6):
  // export never emits a flash call outside them.
  if (e == EntryForm::flash && (c.value_dim != c.head_dim || c.head_dim > 256))
    return std::string("_scaled_dot_product_flash_attention takes equal q, k, v head dims up to 256");
  if (e == EntryForm::efficient && c.q_heads != c.kv_heads)
    return std::string("_scaled_dot_product_efficient_attention takes equal head counts (no GQA)");
  if (e != EntryForm::efficient && !half_precision(c.dtype))
    return std::string("the flash and cuDNN kernels take f16 and bf16 only");
  return std::nullopt;
}

// A finite additive fill (-1e4, a dtype's lowest) is not what causal's -inf
// adds where scores are large, so only bool masks and -inf fills qualify (a
// bool mask reaches cuDNN as -65504, which the target admits only where it
// acts as -inf).
bool causal_bias_applies(const Case& c, Variant v) {
  if (c.variant != kCausalBias || v == Variant::flash || v == Variant::sdpa || !c.mask || c.is_causal)
    return false;
  const bool infinite_fill = c.mask->dtype == DType::b8 || c.mask->fill == MaskFill::neg_inf;
  return infinite_fill && c.mask->pattern == MaskPattern::causal && c.mask->shape.back() == c.kv_len;
}

namespace {

// torch.cond(pred, taken, other, (q, k, v[, attn_mask])): each branch
// binds the operands by position to its own placeholders.
Graph cond_entry_graph(const Case& c, Variant v, bool dispatched) {
  Case inner = c;
  inner.variant = c.variant == kCondLseReader ? kLseReader : kPlain;
  auto taken = std::make_shared<Graph>(fused_entry_graph(inner, v, dispatched));
  inner.variant = kPlain;
  auto other = std::make_shared<Graph>(sdpa_entry_graph(inner));
  Graph g;
  std::vector<Arg> operands{g.placeholder("pred", {DType::b8, {SymExpr(1)}})};
  operands.push_back(g.placeholder("q", {c.dtype, query_shape(c)}));
  operands.push_back(g.placeholder("k", {c.dtype, key_shape(c)}));
  operands.push_back(g.placeholder("v", {c.dtype, value_shape(c)}));
  if (c.mask) operands.push_back(g.placeholder("attn_mask", {c.mask->dtype, c.mask->shape}));
  ValueRef out = g.call("cond", operands, {}, {{c.dtype, output_shape(c)}});
  g.nodes[out.node].subgraphs = {taken, other};
  g.outputs = {out};
  return g;
}

}  // namespace

bool is_cond_variant(const std::string& variant) { return variant == kCond || variant == kCondLseReader; }

namespace {

// The CUDA flash branch of scaled_dot_product_attention (attention.cpp,
// §3.2): pad_last_dim<8> on q, k and v, the unpadded query's scale passed
// explicitly (og_scale), post_process_flash_output's slice back. Returns the
// call as the fused node sees it; `pad` > 0 where the dims were padded.
Case padded_flash_call(const Case& c, int64_t& pad) {
  Case p = c;
  pad = (8 - c.head_dim % 8) % 8;  // flash takes E == Ev only
  p.head_dim = p.value_dim = c.head_dim + pad;
  p.scale = c.effective_scale();
  return p;
}

ValueRef pad_to(Graph& g, ValueRef x, int64_t pad, DType dtype, SymShape shape) {
  if (pad == 0) return x;
  return g.call("aten.constant_pad_nd.default", {x, std::vector<SymExpr>{SymExpr(0), SymExpr(pad)}, 0.0}, {},
                {{dtype, std::move(shape)}});
}

}  // namespace

Graph fused_entry_graph(const Case& c, Variant v, bool dispatched) {
  if (is_cond_variant(c.variant)) return cond_entry_graph(c, v, dispatched);
  if (v == Variant::sdpa) return sdpa_entry_graph(c);
  if (c.layout != Layout::bhsd) throw std::invalid_argument("a fused SDPA entry is [B, H, L, D] (layout bhsd)");
  Graph g;
  ValueRef q = g.placeholder("q", {c.dtype, query_shape(c)});
  ValueRef k = g.placeholder("k", {c.dtype, key_shape(c)});
  ValueRef val = g.placeholder("v", {c.dtype, value_shape(c)});
  std::optional<ValueRef> bias = bias_of(g, c, v);
  const bool lse = c.variant == kLseReader;
  const bool causal = c.is_causal || causal_bias_applies(c, v);
  int64_t pad = 0;
  const Case call = dispatched && v == Variant::flash ? padded_flash_call(c, pad) : c;
  q = pad_to(g, q, pad, c.dtype, query_shape(call));
  k = pad_to(g, k, pad, c.dtype, key_shape(call));
  val = pad_to(g, val, pad, c.dtype, value_shape(call));
  ValueRef out = fused_node(g, call, v, q, k, val, bias, causal, lse);
  const ValueRef lse_out{out.node, 1};
  if (pad > 0)
    out = g.call("aten.slice.Tensor", {out, int64_t{-1}, int64_t{0}, c.value_dim}, {},
                 {{c.dtype, output_shape(c)}}, "output_unpadded");
  g.outputs = {lse ? read_lse(g, c, out, lse_out) : out};
  return g;
}

FusedCall read_fused_call(const Node& n) {
  FusedCall call;
  auto tensor = [&](size_t i) { return std::get<ValueRef>(n.args.at(i)); };
  call.q = tensor(0);
  call.k = tensor(1);
  call.v = tensor(2);
  if (n.op == kFlashOp) {
    call.variant = Variant::flash;
    call.dropout_p = std::get<double>(n.args.at(3));
    call.is_causal = std::get<bool>(n.args.at(4));
  } else if (n.op == kEfficientOp || n.op == kCudnnOp) {
    call.variant = n.op == kEfficientOp ? Variant::efficient : Variant::cudnn;
    if (std::holds_alternative<ValueRef>(n.args.at(3))) call.bias = tensor(3);
    call.dropout_p = std::get<double>(n.args.at(5));
    call.is_causal = std::get<bool>(n.args.at(6));
  } else {
    throw std::invalid_argument("%" + n.name + " (" + n.op + ") is not a fused SDPA op");
  }
  if (const Arg* s = n.kwarg("scale"); s && std::holds_alternative<double>(*s)) call.scale = std::get<double>(*s);
  return call;
}

}  // namespace sdpa::cuda
