// Models backends/transforms/decompose_sdpa.py (DecomposeScaledDotProductAttention:
// _canonicalize_sdpa_call, _sdpa_with_gqa and the traced math body it copies),
// cortex-m-and-xnnpack.md §1.3 and llm-and-cuda.md §2.4, §3.4.
#include "backends/cortex_m/shared_decomposition.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace sdpa::cortex_m {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

std::string sizes_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::vector<int64_t> static_sizes(const SymShape& s) {
  std::vector<int64_t> out;
  for (const auto& d : s) {
    if (!d.is_constant()) throw SharedDecompError("the shared decomposition is modelled for static shapes only");
    out.push_back(d.constant());
  }
  return out;
}

SymShape sym(const std::vector<int64_t>& s) { return SymShape(s.begin(), s.end()); }

SymShape with_last_two(SymShape s, const SymExpr& a, const SymExpr& b) {
  s[s.size() - 2] = a;
  s.back() = b;
  return s;
}

// matmul's batch broadcasting over the dims before the last two (equal ranks).
SymShape broadcast_leading(const SymShape& a, const SymShape& b) {
  SymShape out = a;
  for (size_t d = 0; d + 2 < a.size() && d < b.size(); ++d)
    if (a[d] == SymExpr(1)) out[d] = b[d];
  return out;
}

// ATen's inferExpandGeometry check, from the last dim backwards: a size
// other than 1 must equal its target.
void check_expand(const std::vector<int64_t>& tensor, const std::vector<int64_t>& target) {
  for (size_t i = target.size(); i-- > 0;)
    if (tensor[i] != target[i] && tensor[i] != 1)
      throw SharedDecompError("RuntimeError: The expanded size of the tensor (" + std::to_string(target[i]) +
                              ") must match the existing size (" + std::to_string(tensor[i]) +
                              ") at non-singleton dimension " + std::to_string(i) + ".  Target sizes: " +
                              sizes_str(target) + ".  Tensor sizes: " + sizes_str(tensor));
}

class Emitter {
 public:
  Emitter(Graph& g, SharedMutant m) : g_(g), mutant_(m) {}

  ValueRef emit(SdpaCall call) {
    tile_heads(call);
    return math_body(call);
  }

 private:
  DType dtype(ValueRef v) const { return g_.info(v).dtype; }

  // _sdpa_with_gqa: the head counts are q.shape[1] and k.shape[1], whatever the rank.
  void tile_heads(SdpaCall& call) {
    const std::vector<int64_t> qs = static_sizes(g_.info(call.q).shape), ks = static_sizes(g_.info(call.k).shape);
    if (qs.size() < 2 || ks.size() < 2) throw SharedDecompError("IndexError: tuple index out of range");
    const int64_t hq = qs[1], hk = ks[1];
    if (hq == hk) return;
    if (!call.enable_gqa)
      throw SharedDecompError("ValueError: SDPA head mismatch requires enable_gqa=True: Hq=" + std::to_string(hq) +
                              ", Hk=" + std::to_string(hk));
    if (hk == 0 || hq % hk != 0)
      throw SharedDecompError("ValueError: GQA mismatch: Hq=" + std::to_string(hq) + ", Hk=" + std::to_string(hk));
    // B, _, Tk, D = k.shape
    if (ks.size() < 4)
      throw SharedDecompError("ValueError: not enough values to unpack (expected 4, got " + std::to_string(ks.size()) +
                              ")");
    if (ks.size() > 4) throw SharedDecompError("ValueError: too many values to unpack (expected 4)");
    const int64_t r = hq / hk, B = ks[0], Tk = ks[2], D = ks[3];
    call.k = tile(call.k, {B, hk, r, Tk, D}, {B, hq, Tk, D}, r);
    call.v = tile(call.v, {B, hk, r, Tk, D}, {B, hq, Tk, D}, r);
  }

  // x.unsqueeze(2).expand(target).reshape(out): kv head h/r for head h. The
  // gqa-tile mutant repeats the heads instead (h % Hk).
  ValueRef tile(ValueRef x, const std::vector<int64_t>& target, const std::vector<int64_t>& out, int64_t r) {
    std::vector<int64_t> s = static_sizes(g_.info(x).shape);
    const DType t = dtype(x);
    if (s.size() != 4) throw SharedDecompError("the shared decomposition is modelled for q, k, v of one rank");
    std::vector<int64_t> unsqueezed = s;
    unsqueezed.insert(unsqueezed.begin() + 2, 1);
    check_expand(unsqueezed, target);
    if (mutant_ == SharedMutant::gqa_tile) {
      const SymShape reps{1, r, 1, 1};
      std::vector<int64_t> tiled = s;
      tiled[1] *= r;
      return g_.call("aten.repeat.default", {x, reps}, {}, {{t, sym(tiled)}});
    }
    // A value dim of 1 broadcasts to k's D here: v comes out [B, Hq, Tk, D].
    const ValueRef u = g_.call("aten.unsqueeze.default", {x, int64_t{2}}, {}, {{t, sym(unsqueezed)}});
    const ValueRef e = g_.call("aten.expand.default", {u, sym(target)}, {}, {{t, sym(target)}});
    return g_.call("aten.reshape.default", {e, sym(out)}, {}, {{t, sym(out)}});
  }

  // math's pre_process_group_query_attention_input: with enable_gqa and
  // differing heads at dim -3, repeat_interleave k and v to Hq heads.
  ValueRef interleave(ValueRef x, int64_t hq) {
    SymShape s = g_.info(x).shape;
    const int64_t h = s[s.size() - 3].constant();
    if (h == hq) return x;
    s[s.size() - 3] = hq;
    return g_.call("aten.repeat_interleave.self_int", {x, hq / h, int64_t{-3}}, {}, {{dtype(x), s}});
  }

  // The bool mask as math converts it: where(logical_not(m), -inf, 0).
  ValueRef additive(ValueRef mask, DType t) {
    if (dtype(mask) != DType::b8) return mask;
    const SymShape ms = g_.info(mask).shape;
    const ValueRef drop = g_.call("aten.logical_not.default", {mask}, {}, {{DType::b8, ms}});
    return g_.call("aten.where.Scalar", {drop, -kInf, 0.0}, {}, {{t, ms}});
  }

  ValueRef math_body(SdpaCall call) {
    const DType t = dtype(call.q);
    const SymShape qs = g_.info(call.q).shape;
    const int64_t hq = qs[qs.size() - 3].constant();
    if (call.enable_gqa) {
      call.k = interleave(call.k, hq);
      call.v = interleave(call.v, hq);
    }
    const SymShape ks = g_.info(call.k).shape;
    const SymExpr lq = qs[qs.size() - 2], lkv = ks[ks.size() - 2], e = qs.back();
    // _copy_decomposed_graph overwrites every mul.Scalar literal with math.sqrt(scale).
    if (call.scale && *call.scale < 0)
      throw std::domain_error("ValueError: math domain error (math.sqrt(scale) with scale " +
                              std::to_string(*call.scale) + ")");
    const double e_size = static_cast<double>(e.constant());
    const double sf = call.scale ? std::sqrt(*call.scale) : std::sqrt(1.0 / std::sqrt(e_size));
    const SymShape kt_shape = with_last_two(ks, e, lkv);
    const ValueRef q = g_.call("aten.mul.Scalar", {call.q, sf}, {}, {{t, qs}});
    ValueRef kt = g_.call("aten.transpose.int", {call.k, int64_t{-2}, int64_t{-1}}, {}, {{t, kt_shape}});
    kt = g_.call("aten.mul.Scalar", {kt, sf}, {}, {{t, kt_shape}});
    const SymShape score = with_last_two(broadcast_leading(qs, ks), lq, lkv);
    ValueRef attn = g_.call("aten.matmul.default", {q, kt}, {}, {{t, score}});
    if (call.is_causal && mutant_ != SharedMutant::drop_causal) {
      const SymShape s{lq, lkv};
      const ValueRef ones = g_.call("aten.ones.default", {s}, {{"dtype", DType::b8}}, {{DType::b8, s}});
      const ValueRef tril = g_.call("aten.tril.default", {ones, int64_t{0}}, {}, {{DType::b8, s}});
      attn = g_.call("aten.add.Tensor", {attn, additive(tril, t)}, {}, {{t, score}});
    }
    if (call.mask && mutant_ != SharedMutant::drop_mask)
      attn = g_.call("aten.add.Tensor", {attn, additive(*call.mask, t)}, {}, {{t, score}});
    ValueRef p = g_.call("aten._safe_softmax.default", {attn, int64_t{-1}}, {}, {{t, score}});
    if (call.dropout_p > 0 && mutant_ != SharedMutant::drop_dropout)
      p = g_.call("aten.native_dropout.default", {p, call.dropout_p, true}, {}, {{t, score}, {DType::b8, score}});
    const SymShape out = with_last_two(score, lq, g_.info(call.v).shape.back());
    return g_.call("aten.matmul.default", {p, call.v}, {}, {{t, out}});
  }

  Graph& g_;
  SharedMutant mutant_;
};

}  // namespace

SdpaCall canonicalize_shared_call(const Node& n) {
  std::map<std::string, Arg> kwargs(n.kwargs.begin(), n.kwargs.end());
  auto take = [&](size_t index, const std::string& name) -> std::optional<Arg> {
    if (n.args.size() > index) return n.args[index];
    auto it = kwargs.find(name);
    if (it == kwargs.end()) return std::nullopt;
    Arg a = it->second;
    kwargs.erase(it);
    return a;
  };
  auto bad = [&](const std::string& what) {
    return SharedDecompError("%" + n.name + ": " + what + " has an unexpected type");
  };
  SdpaCall call;
  for (size_t i = 0; i < 3; ++i) {
    if (i >= n.args.size() || !std::holds_alternative<ValueRef>(n.args[i])) throw bad("argument " + std::to_string(i));
    (i == 0 ? call.q : i == 1 ? call.k : call.v) = std::get<ValueRef>(n.args[i]);
  }
  if (auto m = take(3, "attn_mask"); m && !std::holds_alternative<None>(*m)) {
    if (!std::holds_alternative<ValueRef>(*m)) throw bad("attn_mask");
    call.mask = std::get<ValueRef>(*m);
  }
  if (auto d = take(4, "dropout_p")) {
    if (const auto* x = std::get_if<double>(&*d)) call.dropout_p = *x;
    else if (const auto* i = std::get_if<int64_t>(&*d)) call.dropout_p = static_cast<double>(*i);
    else throw bad("dropout_p");
  }
  if (auto c = take(5, "is_causal")) {
    if (!std::holds_alternative<bool>(*c)) throw bad("is_causal");
    call.is_causal = std::get<bool>(*c);
  }
  if (auto it = kwargs.find("scale"); it != kwargs.end()) {
    if (const auto* x = std::get_if<double>(&it->second)) call.scale = *x;
    else if (!std::holds_alternative<None>(it->second)) throw bad("scale");
    kwargs.erase(it);
  }
  if (auto it = kwargs.find("enable_gqa"); it != kwargs.end()) {
    if (!std::holds_alternative<bool>(it->second)) throw bad("enable_gqa");
    call.enable_gqa = std::get<bool>(it->second);
    kwargs.erase(it);
  }
  if (!kwargs.empty()) {
    std::vector<std::string> names;
    for (const auto& [name, a] : kwargs) names.push_back(name);  // std::map: sorted, as Python's sorted()
    throw SharedDecompError("RuntimeError: Unsupported kwargs for scaled_dot_product_attention: " + join(names));
  }
  return call;
}

ValueRef emit_shared_decomposition(Graph& g, const SdpaCall& call, SharedMutant mutant) {
  return Emitter(g, mutant).emit(call);
}

}  // namespace sdpa::cortex_m
