#pragma once
/// What the custom_sdpa kernel tests share: [B, S, H, D] tensors, a call
/// run through the interpreter on one numerics, fault, thread count and
/// ExecuTorch tree, and the errors a call raises.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/llm/custom_sdpa_kernel.h"
#include "harness/ir/interpreter.h"

namespace sdpa::llm::custom_sdpa_test {

inline Tensor tensor(DType t, Shape s, std::vector<double> v) {
  Tensor x(t, std::move(s));
  x.data = std::move(v);
  return x;
}

// A [B, S, H, D] tensor with element (s, h, d) = f(s, h, d), B = 1.
inline Tensor bshd(DType t, int64_t S, int64_t H, int64_t D, double (*f)(int64_t, int64_t, int64_t)) {
  Tensor x(t, {1, S, H, D});
  for (int64_t s = 0; s < S; ++s)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < D; ++d) x.data[(s * H + h) * D + d] = round_to(t, f(s, h, d));
  return x;
}

inline SymShape sym(const Shape& s) {
  SymShape out;
  for (int64_t d : s) out.push_back(d);
  return out;
}

struct Call {
  Tensor q, k, v;
  std::optional<Tensor> mask;
  int64_t start_pos = 0;
  double dropout = 0.0;
  bool causal = false;
  std::optional<double> scale;
  bool by_keyword = false;  // start_pos and after passed as keyword arguments
};

inline Tensor run(const Call& c, Numerics n = Numerics::emulated, KernelFault fault = {}, int64_t threads = 1,
           EtRevision rev = {}) {
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
  const Arg scale = c.scale ? Arg(*c.scale) : Arg(None{});
  std::vector<Arg> args = {q, k, v, c.start_pos, mask, c.dropout, c.causal, scale};
  std::vector<std::pair<std::string, Arg>> kwargs;
  if (c.by_keyword) {
    args.resize(3);
    kwargs = {{"scale", scale}, {"is_causal", c.causal}, {"attn_mask", mask}, {"start_pos", c.start_pos},
              {"drpout_p", c.dropout}};
  }
  g.outputs = {g.call(kCustomSdpaOp, args, kwargs, {{c.q.dtype, sym(c.q.shape)}})};
  KernelSet ks("t");
  ks.add(kCustomSdpaOp, custom_sdpa_kernel(n, fault, threads, rev));
  return interpret(g, ks, in, {}).outputs[0];
}

// Attention of query row `qrow` (E = 1, H = 1) over keys `keys`, exactly.
inline double attend(double qrow, const std::vector<double>& k, const std::vector<double>& v,
              const std::vector<int>& keys, double scale) {
  double num = 0, den = 0;
  for (int j : keys) {
    double w = std::exp(qrow * k[j] * scale);
    num += w * v[j];
    den += w;
  }
  return num / den;
}

inline double qf(int64_t s, int64_t, int64_t) { return 0.3 + 0.2 * s; }
inline double kf(int64_t s, int64_t, int64_t) { return -0.5 + 0.4 * s; }
inline double vf(int64_t s, int64_t, int64_t) { return 1.0 + s; }

// The kind and text of the error a call raises, or "no error".
inline std::pair<KernelError::Kind, std::string> error_of(const Call& c, EtRevision rev = {}) {
  try {
    run(c, Numerics::emulated, {}, 1, rev);
  } catch (const KernelError& e) {
    std::string what = e.what();
    return {e.kind, what.substr(what.find("): ") + 3)};
  }
  return {KernelError::Kind::unsupported, "no error"};
}

// The kernel called directly, as the runtime would: the pass never emits
// these dtypes (the Meta kernel asserts first).
inline std::pair<KernelError::Kind, std::string> direct_error(const Tensor& q, const Tensor& k, const Tensor& v,
                                                              EtRevision rev = {}) {
  Node node;
  node.name = "custom_sdpa";
  node.op = kCustomSdpaOp;
  node.outputs = {{q.dtype, sym(q.shape)}};
  RunContext ctx;
  KernelArgs a(node, ctx);
  a.args = {&q, &k, &v, int64_t{0}, None{}, 0.0, false, None{}};
  try {
    custom_sdpa_kernel(Numerics::emulated, {}, 1, rev)(a);
  } catch (const KernelError& e) {
    return {e.kind, e.what()};
  }
  return {KernelError::Kind::unsupported, "no error"};
}

// Lq query rows over 3 keys, row 32's keys all masked: the first row of
// the second query block (32 rows a block).
inline Call row_32_masked(int64_t Lq) {
  Call c{bshd(DType::f32, Lq, 1, 1, qf), bshd(DType::f32, 3, 1, 1, kf), bshd(DType::f32, 3, 1, 1, vf)};
  Tensor mask(DType::f32, {Lq, 3});
  for (int64_t j = 0; j < 3; ++j) mask.data[32 * 3 + j] = -INFINITY;
  c.mask = mask;
  return c;
}

inline EtRevision revision(const std::string& name) {
  for (const auto& [value, rev] : et_revisions())
    if (value == name) return rev;
  ADD_FAILURE() << "no revision " << name;
  return {};
}

// Lq = Lkv = 520, E = 1, no mask: kv blocks [0, 512) and [512, 520). q = 1,
// k = 0 but k[3] = NaN, v[j] = j. Every score of block 0 lies in the
// vector part (512 = 64 * 8 lanes): its NaN max is dropped by std::max, the
// block looks fully masked and is skipped, and each row averages block 1
// alone: (512 + ... + 519) / 8 = 515.5, finite where aten gives NaN.
inline Call nan_in_first_block(int64_t nan_key) {
  Call c{bshd(DType::f32, 520, 1, 1, [](int64_t, int64_t, int64_t) { return 1.0; }),
         bshd(DType::f32, 520, 1, 1, [](int64_t, int64_t, int64_t) { return 0.0; }),
         bshd(DType::f32, 520, 1, 1, [](int64_t s, int64_t, int64_t) { return static_cast<double>(s); })};
  c.k.data[nan_key] = std::nan("");
  return c;
}

}  // namespace sdpa::llm::custom_sdpa_test
