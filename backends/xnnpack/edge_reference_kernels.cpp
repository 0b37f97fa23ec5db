#include "backends/xnnpack/edge_reference_kernels.h"

#include "backends/xnnpack/pattern_entry.h"
#include "harness/ir/graph.h"

namespace sdpa::xnnpack {
namespace {

// Portable mul.Scalar reads the Scalar as scalar_to<CTYPE_COMPUTE> (float
// for f16 and f32): the graph's double literal is rounded there, in every
// numerics, the exact one included.
KernelFn mul_scalar_in_op_math(KernelFn mul) {
  return [mul](const KernelArgs& a) {
    const DType t = a.tensor(0).dtype;
    KernelArgs read = a;
    if ((t == DType::f32 || t == DType::f16 || t == DType::bf16) && read.args.size() > 1 &&
        std::holds_alternative<double>(read.args[1]))
      read.args[1] = round_to(DType::f32, std::get<double>(read.args[1]));
    return mul(read);
  };
}

std::vector<Tensor> eq_scalar(const KernelArgs& a) {
  const Tensor& x = a.tensor(0);
  const double s = a.real(1);
  Tensor r(DType::b8, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) r.data[i] = x.data[i] == s ? 1.0 : 0.0;
  return one_output(std::move(r));
}

// any.dim(x, dim, keepdim): true where some element along `dim` is nonzero.
std::vector<Tensor> any_dim(const KernelArgs& a) {
  const Tensor& x = a.tensor(0);
  int64_t dim = a.integer(1);
  if (dim < 0) dim += x.dim();
  if (dim < 0 || dim >= x.dim())
    throw GraphError("%" + a.node.name + " (" + a.node.op + "): dim " + std::to_string(a.integer(1)) +
                     " out of range for rank " + std::to_string(x.dim()));
  int64_t len = x.shape[dim], inner = 1;
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.shape[d];
  const int64_t outer = len * inner == 0 ? 0 : x.numel() / (len * inner);
  Tensor r(DType::b8, a.out_shape());
  if (r.numel() != outer * inner)
    throw GraphError("%" + a.node.name + " (" + a.node.op + "): output shape does not match the reduction");
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t e = 0; e < inner; ++e) {
      bool any = false;
      for (int64_t i = 0; i < len && !any; ++i) any = x.data[(o * len + i) * inner + e] != 0.0;
      r.data[o * inner + e] = any ? 1.0 : 0.0;
    }
  return one_output(std::move(r));
}

std::vector<Tensor> full_like(const KernelArgs& a) {
  const Tensor& x = a.tensor(0);
  const DType t = a.kwarg_dtype("dtype").value_or(x.dtype);
  return one_output(Tensor(t, x.shape, round_to(t, a.real(1))));
}

}  // namespace

KernelSet make_edge_reference_kernels(const std::string& name, Numerics numerics) {
  KernelSet k = make_reference_kernels(name, numerics);
  k.add(kExpandCopy, *k.find("aten.expand.default"));
  k.add(kViewCopy, *k.find("aten.view.default"));
  k.add(kPermuteCopy, *k.find("aten.permute.default"));
  k.add(kMulScalar, mul_scalar_in_op_math(*k.find(kMulScalar)));
  k.add(kEqScalar, eq_scalar);
  k.add(kAnyDim, any_dim);
  k.add(kFullLike, full_like);
  return k;
}

}  // namespace sdpa::xnnpack
