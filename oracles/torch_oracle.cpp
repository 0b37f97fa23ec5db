#include "oracles/torch_oracle.h"

#include <ATen/ATen.h>

#include <cstring>
#include <limits>
#include <stdexcept>

namespace sdpa {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

[[noreturn]] void reject(const std::string& why) {
  throw std::invalid_argument("libtorch oracle: " + why);
}

// A float64 ATen view of a harness tensor: no copy, never written.
at::Tensor view_of(const Tensor& t) {
  return at::from_blob(const_cast<double*>(t.data.data()), t.shape, at::kDouble);
}

// [batch..., H, L, D] whatever the entry layout (a view).
at::Tensor heads_first(const Tensor& t, Layout layout) {
  at::Tensor x = view_of(t);
  return layout == Layout::bshd ? x.transpose(-3, -2) : x;
}

// k or v as the query heads read them: enable_gqa repeats each kv head
// Hq / Hkv times in interleave order; Hkv == 1 broadcasts in matmul.
at::Tensor kv_for_query_heads(const at::Tensor& x, const Case& c, const ConcreteSizes& s) {
  if (s.Hq == s.Hkv || s.Hkv == 1) return x;
  if (!c.enable_gqa || s.Hq % s.Hkv != 0)
    reject("Hq " + std::to_string(s.Hq) + " and Hkv " + std::to_string(s.Hkv) +
           " need enable_gqa with Hq % Hkv == 0");
  return x.repeat_interleave(s.Hq / s.Hkv, -3);
}

// The dropout multiplier of each attention weight: 1/(1-p) kept, 0 dropped,
// drawn from the case's "dropout" stream at the weight's flat index.
at::Tensor dropout_factors(const Case& c, at::IntArrayRef shape) {
  at::Tensor f = at::empty(shape, at::kDouble);
  double* data = f.data_ptr<double>();
  const CounterStream stream(c.data.seed, "dropout");
  const double keep = 1.0 / (1.0 - c.dropout_p);
  for (int64_t i = 0; i < f.numel(); ++i)
    data[i] = dropout_keep(stream, static_cast<uint64_t>(i), c.dropout_p) ? keep : 0.0;
  return f;
}

// convert_boolean_attn_mask: keep -> 0, drop -> -inf, added to the scores
// (so a NaN or +inf score stays NaN where the mask drops it, as in aten).
at::Tensor additive(const at::Tensor& keep) {
  return at::zeros(keep.sizes(), at::kDouble).masked_fill_(keep.logical_not(), kNegInf);
}

void check_shape(const Tensor& t, const SymShape& want, const Assignment& run, const char* what) {
  if (t.shape != eval_shape(want, run))
    reject(std::string(what) + " has shape " + shape_str(t.shape) + ", the case says " +
           shape_str(eval_shape(want, run)));
}

}  // namespace

Golden torch_golden(const Case& c, const CaseTensors& t, const Assignment& run) {
  c10::InferenceMode inference;  // no autograd dispatch for the oracle's ops
  const ConcreteSizes s = concrete_sizes(c, run);
  check_shape(t.q, query_shape(c), run, "q");
  check_shape(t.k, key_shape(c), run, "k");
  check_shape(t.v, value_shape(c), run, "v");
  if (t.mask && t.mask->shape != s.mask_shape) reject("the mask does not have the case's shape");

  const at::Tensor q = heads_first(t.q, c.layout);
  const at::Tensor k = kv_for_query_heads(heads_first(t.k, c.layout), c, s);
  const at::Tensor v = kv_for_query_heads(heads_first(t.v, c.layout), c, s);
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)).mul_(c.effective_scale());
  if (c.is_causal) {  // tril's diagonal: 0 top-left, Lkv - Lq bottom-right, start_pos start-pos
    const int64_t diagonal = c.causal_alignment == CausalAlignment::top_left     ? 0
                             : c.causal_alignment == CausalAlignment::bottom_right ? s.Lkv - s.Lq
                                                                                   : t.start_pos;
    scores.add_(additive(at::ones({s.Lq, s.Lkv}, at::kBool).tril(diagonal)));
  }
  if (t.mask) {
    const at::Tensor mask = view_of(*t.mask);
    if (t.mask->dtype == DType::b8)
      scores.add_(additive(mask.ne(0.0)));
    else
      scores.add_(mask);
  }
  // aten._safe_softmax: a row of all -inf gives weights 0, not NaN.
  const at::Tensor fully_masked = scores.eq(kNegInf).all(-1, /*keepdim=*/true);
  at::Tensor attn = at::softmax(scores, -1).masked_fill_(fully_masked, 0.0);
  if (c.dropout_p > 0) attn.mul_(dropout_factors(c, attn.sizes()));
  // A fully masked row's zero weights still meet V: 0 * inf is NaN, as in aten.
  const at::Tensor out = at::matmul(attn, v).contiguous();

  Golden g;
  g.out = Tensor(DType::f64, Shape(out.sizes().begin(), out.sizes().end()));
  std::memcpy(g.out.data.data(), out.data_ptr<double>(), sizeof(double) * g.out.data.size());
  const at::Tensor flags = fully_masked.to(at::kByte).contiguous();
  g.fully_masked.assign(flags.data_ptr<uint8_t>(), flags.data_ptr<uint8_t>() + flags.numel());
  return g;
}

}  // namespace sdpa
