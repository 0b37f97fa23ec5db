#include "backends/xnnpack/xnnpack_kernels.h"

#include <cmath>

#include "backends/common/sdpa_entry.h"
#include "backends/xnnpack/pattern_entry.h"
#include "backends/xnnpack/xnn/xnnpack_ops.h"
#include "backends/xnnpack/xnn/xnnpack_sdpa_model.h"
#include "harness/case/case.h"
#include "harness/ir/graph.h"

namespace sdpa::xnnpack {
namespace {

FloatTensor to_float(const Tensor& t) {
  FloatTensor f;
  f.shape = t.shape;
  f.data.reserve(t.data.size());
  for (double x : t.data) f.data.push_back(static_cast<float>(x));
  return f;
}

Tensor from_float(const FloatTensor& f, DType t) {
  Tensor r(t, f.shape);
  for (size_t i = 0; i < f.data.size(); ++i) r.data[i] = f.data[i];
  return r;
}

std::optional<Precision> precision_of(DType t) {
  if (t == DType::f32) return Precision::f32;
  if (t == DType::f16) return Precision::f16;
  return std::nullopt;
}

// Runs an XNNPACK call; a status other than success becomes a finding.
template <typename F>
std::vector<Tensor> xnn_call(const KernelArgs& a, F f) {
  try {
    return one_output(f());
  } catch (const XnnpackError& e) {
    const auto kind = e.status_name == "xnn_status_unsupported_hardware" ? KernelError::Kind::unsupported
                                                                         : KernelError::Kind::recoverable;
    throw KernelError(kind, "XNNPACK " + e.op + " returned " + e.status_name + " for %" + a.node.name + ": " + e.what());
  }
}

// The portable kernel for an op XNNPACK does not take at this dtype.
std::vector<Tensor> portable(const KernelSet& k, const KernelArgs& a) {
  return (*k.find(a.node.op))(a);
}

// A row of the input whose every entry is -inf: _safe_softmax gives 0 there.
void zero_fully_masked_rows(const Tensor& x, Tensor& p) {
  const int64_t n = x.shape.back();
  for (int64_t row = 0; n > 0 && row * n < x.numel(); ++row) {
    bool all = true;
    for (int64_t j = 0; j < n && all; ++j) all = x.data[row * n + j] == -INFINITY;
    if (all)
      for (int64_t j = 0; j < n; ++j) p.data[row * n + j] = 0.0;
  }
}

// The deleted SDPAVisitor's inputs to xnn_define_scaled_dot_product_attention
// (semantics §3.3): q, k, v as they are, the mask required, the scale from
// kwargs["scale"] when truthy else 1/sqrt(C), as torch.full((C,), scale,
// dtype=mask.dtype).
std::vector<Tensor> sdpa_operator(const KernelArgs& a) {
  const Tensor &q = a.tensor(0), &k = a.tensor(1), &v = a.tensor(2);
  // SDPAConfig (semantics §3.3) delegates an fp32 node only; outside the
  // delegate nothing runs it: kernels/portable/functions.yaml has no SDPA.
  if (q.dtype != DType::f32)
    throw KernelError(KernelError::Kind::unsupported,
                      std::string("SDPAConfig supports FP32 only: an ") + dtype_name(q.dtype) +
                          " SDPA is not delegated, and the portable kernels have none");
  const Tensor* mask = a.optional_tensor(3);
  if (!mask) throw KernelError(KernelError::Kind::recoverable, "SDPAVisitor: the XNNPACK SDPA node needs a mask");
  if (mask->dtype != DType::f32 && mask->dtype != DType::f16)
    throw KernelError(KernelError::Kind::recoverable,
                      std::string("SDPAVisitor: mask dtype must be float32 or float16, got ") + dtype_name(mask->dtype));
  auto p = precision_of(q.dtype);
  if (!p) throw KernelError(KernelError::Kind::unsupported, std::string("XNNPACK SDPA takes fp32 and fp16, not ") +
                                                                dtype_name(q.dtype));
  const int64_t C = q.shape.back();
  const double given = a.kwarg_real("scale").value_or(0.0);
  const double scale = given != 0.0 ? given : 1.0 / std::sqrt(static_cast<double>(C));
  SdpaOperatorCall call;
  call.query = to_float(q);
  call.key = to_float(k);
  call.value = to_float(v);
  call.mask = to_float(*mask);
  call.scale.shape = {C};
  call.scale.data.assign(C, static_cast<float>(round_to(mask->dtype, scale)));
  call.precision = *p;
  return xnn_call(a, [&] {
    xnnpack_sdpa_validate(call);
    return from_float(xnnpack_sdpa_model(call), a.out_dtype());
  });
}

}  // namespace

bool runs_on_xnnpack(const std::string& op, DType t) {
  if (op == kSdpaOp) return t == DType::f32;  // SDPAConfig: FP32 only
  if (op == kBmm || op == kMulTensor) return t == DType::f32 || t == DType::f16;
  if (op == kSafeSoftmax || op == kSoftmax) return t == DType::f32;  // this XNNPACK has no f16 softmax
  return false;
}

PartitionCounts partition_counts(const Graph& g) {
  PartitionCounts c;
  for (const Node& n : g.nodes) {
    if (n.op == "placeholder" || n.op == "get_attr") continue;
    (runs_on_xnnpack(n.op, n.outputs[0].dtype) ? c.delegated : c.portable) += 1;
  }
  return c;
}

KernelSet make_xnnpack_kernels() {
  auto ref = std::make_shared<KernelSet>(make_edge_reference_kernels("portable", Numerics::emulated));
  KernelSet k("xnnpack");
  for (const auto& op : ref->ops()) k.add(op, *ref->find(op));
  k.add(kBmm, [ref](const KernelArgs& a) {
    auto p = precision_of(a.out_dtype());
    if (!p) return portable(*ref, a);
    return xnn_call(a, [&] { return from_float(bmm(to_float(a.tensor(0)), to_float(a.tensor(1)), *p), a.out_dtype()); });
  });
  k.add(kMulTensor, [ref](const KernelArgs& a) {
    auto p = precision_of(a.out_dtype());
    if (!p || a.tensor(0).dtype != a.tensor(1).dtype) return portable(*ref, a);
    return xnn_call(a, [&] {
      return from_float(multiply(to_float(a.tensor(0)), to_float(a.tensor(1)), *p), a.out_dtype());
    });
  });
  k.add(kSafeSoftmax, [ref](const KernelArgs& a) {
    const Tensor& x = a.tensor(0);
    const int64_t dim = a.integer(1);
    if (a.out_dtype() != DType::f32 || x.dim() == 0 || (dim != -1 && dim != x.dim() - 1)) return portable(*ref, a);
    return xnn_call(a, [&] {
      Tensor p = from_float(softmax_last_dim(to_float(x)), DType::f32);
      zero_fully_masked_rows(x, p);
      return p;
    });
  });
  // The decomposed form's _softmax: XNNPACK's softmax alone, the row guard
  // stays on portable kernels as its own nodes.
  k.add(kSoftmax, [ref](const KernelArgs& a) {
    const Tensor& x = a.tensor(0);
    const int64_t dim = a.integer(1);
    if (a.out_dtype() != DType::f32 || x.dim() == 0 || (dim != -1 && dim != x.dim() - 1)) return portable(*ref, a);
    return xnn_call(a, [&] { return from_float(softmax_last_dim(to_float(x)), DType::f32); });
  });
  k.add(kSdpaOp, sdpa_operator);
  return k;
}

// The SDPA operator (§4.3): f32 throughout; f16 GEMMs that round the
// accumulator to fp16 each k step, f16 scale, scores and P. The decomposed
// graph: f32 XNNPACK ops; in f16 the XNNPACK GEMM accumulates in fp16 and
// the portable softmax stores fp16. Where q and k carry sqrt(|scale|) the
// scale is split.
KernelNumerics xnnpack_numerics(const Case& c, const Graph& g) {
  if (c.dtype != DType::f32 && c.dtype != DType::f16) return {};
  const DType t = c.dtype;
  const bool split = g.count(kSdpaOp) == 0 && pattern_variant(c.variant).site == ScaleSite::q_and_k;
  return KernelNumerics::floating({t, t, t, t, t, split});
}

}  // namespace sdpa::xnnpack
