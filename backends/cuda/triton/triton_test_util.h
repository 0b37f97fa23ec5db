#pragma once
/// Test helpers: bf16 [B, H, L, D] tensors and one Triton op call run by
/// the interpreter.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/ir/interpreter.h"
#include "harness/ir/kernel_set.h"

namespace sdpa::cuda_triton::testing {

/// A [B, H, L, D] tensor with element (b, h, l, d) = f(b, h, l, d), rounded to t.
inline Tensor bhld(Shape s, const std::function<double(int64_t, int64_t, int64_t, int64_t)>& f,
                   DType t = DType::bf16) {
  Tensor x(t, s);
  size_t i = 0;
  for (int64_t b = 0; b < s[0]; ++b)
    for (int64_t h = 0; h < s[1]; ++h)
      for (int64_t l = 0; l < s[2]; ++l)
        for (int64_t d = 0; d < s[3]; ++d) x.data[i++] = round_to(t, f(b, h, l, d));
  return x;
}

inline Tensor bools(Shape s, std::vector<int> keep) {
  Tensor x(DType::b8, std::move(s));
  x.data.assign(keep.begin(), keep.end());
  return x;
}

inline SymShape sym(const Shape& s) { return SymShape(s.begin(), s.end()); }

/// The call `op(q, k, v, mask, dropout_p, is_causal, scale, enable_gqa)`.
struct TritonCallSpec {
  Tensor q, k, v;
  std::optional<Tensor> mask;
  double dropout_p = 0.0;
  bool is_causal = false;
  double scale = 0.0;
  bool enable_gqa = false;
};

inline Tensor run_triton(const std::string& op, const KernelFn& kernel, const TritonCallSpec& c) {
  Graph g;
  std::map<std::string, Tensor> in{{"q", c.q}, {"k", c.k}, {"v", c.v}};
  ValueRef q = g.placeholder("q", {c.q.dtype, sym(c.q.shape)});
  ValueRef k = g.placeholder("k", {c.k.dtype, sym(c.k.shape)});
  ValueRef v = g.placeholder("v", {c.v.dtype, sym(c.v.shape)});
  Arg mask = None{};
  if (c.mask) {
    mask = g.placeholder("mask", {c.mask->dtype, sym(c.mask->shape)});
    in["mask"] = *c.mask;
  }
  Shape out = c.q.shape;
  if (out.size() == 4) out[3] = c.v.shape.size() == 4 ? c.v.shape[3] : out[3];
  g.outputs = {g.call(op, {q, k, v, mask, c.dropout_p, c.is_causal, c.scale, c.enable_gqa}, {},
                      {{c.q.dtype, sym(out)}})};
  KernelSet ks("t");
  ks.add(op, kernel);
  return interpret(g, ks, in, {}).outputs[0];
}

/// The kind and the text (without the interpreter's node prefix) a call raises.
inline std::pair<KernelError::Kind, std::string> raised(const std::function<void()>& call) {
  try {
    call();
  } catch (const KernelError& e) {
    std::string what = e.what();
    return {e.kind, what.substr(what.find("): ") + 3)};
  }
  return {KernelError::Kind::unsupported, "no error"};
}

}  // namespace sdpa::cuda_triton::testing
