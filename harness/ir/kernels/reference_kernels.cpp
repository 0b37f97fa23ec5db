#include "harness/ir/kernels/reference_kernels.h"

#include "harness/ir/kernels/reference_common.h"

namespace sdpa {
namespace ref {

std::vector<int64_t> broadcast_strides(const Shape& shape, size_t rank) {
  std::vector<int64_t> out(rank, 0);
  const std::vector<int64_t> own = strides_of(shape);
  const size_t skip = rank - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) out[skip + d] = shape[d] == 1 ? 0 : own[d];
  return out;
}

int64_t wrap_dim(int64_t d, int64_t r, const Node& node) {
  int64_t w = d < 0 ? d + r : d;
  if (w < 0 || w >= r)
    throw GraphError("%" + node.name + " (" + node.op + "): dim " + std::to_string(d) +
                     " out of range for rank " + std::to_string(r));
  return w;
}

void refuse(const KernelArgs& a, const std::string& why) {
  throw KernelError(KernelError::Kind::recoverable, why);
}

}  // namespace ref

KernelSet make_reference_kernels(const std::string& name, Numerics numerics) {
  KernelSet k(name);
  ref::Num n{numerics};
  ref::add_elementwise_kernels(k, n);
  ref::add_shape_kernels(k, n);
  ref::add_attention_kernels(k, n);
  return k;
}

const KernelSet& exact_kernels() {
  static const KernelSet k = make_reference_kernels("exact", Numerics::exact);
  return k;
}

const KernelSet& naive_kernels() {
  static const KernelSet k = make_reference_kernels("naive", Numerics::naive);
  return k;
}

}  // namespace sdpa
