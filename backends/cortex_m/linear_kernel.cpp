// Models torch.nn.functional.linear (y = x·wᵀ + b) as the portable fp32 kernel
// and as its exact meaning.
#include "backends/cortex_m/linear_kernel.h"

namespace sdpa::cortex_m {

void add_linear_kernel(KernelSet& k, bool exact, DType accumulation) {
  const bool f16 = accumulation == DType::f16;
  k.add("aten.linear.default", [exact, f16](const KernelArgs& a) -> std::vector<Tensor> {
    const Tensor& x = a.tensor(0);
    const Tensor& w = a.tensor(1);
    const Tensor* b = a.optional_tensor(2);
    if (x.dtype != DType::f32 || w.dtype != DType::f32 || w.dim() != 2 || x.dim() < 1 ||
        x.shape.back() != w.shape[1])
      throw KernelError(KernelError::Kind::unsupported, "linear takes f32 x [..., K] and w [N, K]");
    const int64_t kdim = w.shape[1], n = w.shape[0], rows = x.numel() / kdim;
    Shape s = x.shape;
    s.back() = n;
    Tensor out(DType::f32, s);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < n; ++o) {
        long double acc = 0;
        float accf = 0;
        for (int64_t i = 0; i < kdim; ++i) {
          acc += static_cast<long double>(x.data[r * kdim + i]) * w.data[o * kdim + i];
          accf += static_cast<float>(x.data[r * kdim + i]) * static_cast<float>(w.data[o * kdim + i]);
          if (f16) accf = static_cast<float>(round_to(DType::f16, accf));
        }
        if (b) acc += b->data[o], accf += static_cast<float>(b->data[o]);
        if (f16) accf = static_cast<float>(round_to(DType::f16, accf));
        out.data[r * n + o] = exact ? static_cast<double>(acc) : static_cast<double>(accf);
      }
    return one_output(std::move(out));
  });
}

}  // namespace sdpa::cortex_m
