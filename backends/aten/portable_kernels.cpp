#include "backends/aten/portable_kernels.h"

#include <cmath>

#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::aten {
namespace {

// softmax(x) = exp(x) / sum(exp(x)) in f32, without subtracting the row max.
std::vector<Tensor> softmax_without_max(const KernelArgs& a) {
  const Tensor& x = a.tensor(0);
  Tensor r(a.out_dtype(), x.shape);
  int64_t n = x.size(-1);
  for (int64_t row = 0; n > 0 && row < x.numel() / n; ++row) {
    const double* in = x.data.data() + row * n;
    bool all_masked = true;
    float total = 0;
    for (int64_t j = 0; j < n; ++j) {
      all_masked = all_masked && in[j] == -INFINITY;
      total += std::exp(static_cast<float>(in[j]));
    }
    for (int64_t j = 0; j < n; ++j)
      r.data[row * n + j] =
          all_masked ? 0.0 : round_to(r.dtype, std::exp(static_cast<float>(in[j])) / total);
  }
  return one_output(std::move(r));
}

// The matmul result held in bf16 before it is stored in its own dtype.
KernelFn rounding_to_bf16(KernelFn matmul) {
  return [matmul](const KernelArgs& a) {
    std::vector<Tensor> out = matmul(a);
    for (double& x : out[0].data) x = round_to(out[0].dtype, round_to(DType::bf16, x));
    return out;
  };
}

}  // namespace

KernelSet portable_kernels(Mutant mutant) {
  KernelSet k = make_reference_kernels("portable", Numerics::emulated);
  if (mutant == Mutant::softmax_no_max) k.add("aten._safe_softmax.default", softmax_without_max);
  if (mutant == Mutant::matmul_bf16_output)
    k.add("aten.matmul.default", rounding_to_bf16(*k.find("aten.matmul.default")));
  return k;
}

}  // namespace sdpa::aten
