#include "harness/ir/kernels/reference_kernels.h"

#include "harness/ir/kernels/reference_common.h"

namespace sdpa {
namespace ref {

void for_each_index(const Shape& shape,
                    const std::function<void(const std::vector<int64_t>&)>& f) {
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t n = numel_of(shape);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(idx);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
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
