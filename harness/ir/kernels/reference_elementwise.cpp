// Elementwise, fill and dtype-conversion ops of the reference kernel sets.
#include <cmath>

#include "harness/ir/kernels/reference_common.h"

namespace sdpa::ref {
namespace {

template <typename F>
Tensor broadcast_binary(const KernelArgs& a, const Tensor& x, const Tensor& y, DType out, F f) {
  auto shape = broadcast_shapes(x.shape, y.shape);
  if (!shape) refuse(a, "shapes " + shape_str(x.shape) + " and " + shape_str(y.shape) +
                            " do not broadcast");
  Tensor r(out, *shape);
  if (x.shape == y.shape) {
    for (int64_t i = 0; i < r.numel(); ++i) r.data[i] = f(x.data[i], y.data[i]);
    return r;
  }
  std::array<std::vector<int64_t>, 2> src{broadcast_strides(x.shape, shape->size()),
                                          broadcast_strides(y.shape, shape->size())};
  double* out_data = r.data.data();
  const double *xd = x.data.data(), *yd = y.data.data();
  for_each_offsets(*shape, src, [&](const std::array<int64_t, 2>& off) {
    *out_data++ = f(xd[off[0]], yd[off[1]]);
  });
  return r;
}

template <typename F>
Tensor unary(const Tensor& x, DType out, F f) {
  Tensor r(out, x.shape);
  for (int64_t i = 0; i < r.numel(); ++i) r.data[i] = f(x.data[i]);
  return r;
}

// aten.<name>.Tensor and .Scalar: f on each pair of elements, then each
// result rounded as the op's output (n.op), a row at a time. A template on
// f, so that f inlines into the loop.
template <typename F>
void add_binary(KernelSet& k, Num n, const std::string& name, F f) {
  k.add("aten." + name + ".Tensor", [n, f](const KernelArgs& a) {
    DType t = a.out_dtype();
    double alpha = a.kwarg_real("alpha").value_or(1.0);
    Tensor r = alpha == 1.0 ? broadcast_binary(a, a.tensor(0), a.tensor(1), t, f)
                            : broadcast_binary(a, a.tensor(0), a.tensor(1), t,
                                               [&](double x, double y) { return f(x, y * alpha); });
    n.op_all(t, r.data.data(), r.numel());
    return one_output(std::move(r));
  });
  k.add("aten." + name + ".Scalar", [n, f](const KernelArgs& a) {
    DType t = a.out_dtype();
    double s = n.scalar(t, a.real(1));
    Tensor r = unary(a.tensor(0), t, [&](double x) { return f(x, s); });
    n.op_all(t, r.data.data(), r.numel());
    return one_output(std::move(r));
  });
}

Tensor filled(const KernelArgs& a, double value) {
  DType t = a.kwarg_dtype("dtype").value_or(a.out_dtype());
  return Tensor(t, a.out_shape(), round_to(t, value));
}

}  // namespace

void add_elementwise_kernels(KernelSet& k, Num n) {
  add_binary(k, n, "add", [](double x, double y) { return x + y; });
  add_binary(k, n, "sub", [](double x, double y) { return x - y; });
  add_binary(k, n, "mul", [](double x, double y) { return x * y; });
  add_binary(k, n, "div", [](double x, double y) { return x / y; });

  k.add("aten.logical_not.default", [](const KernelArgs& a) {
    return one_output(unary(a.tensor(0), DType::b8, [](double x) { return x == 0.0 ? 1.0 : 0.0; }));
  });
  k.add("aten.masked_fill.Scalar", [n](const KernelArgs& a) {
    const Tensor& x = a.tensor(0);
    double value = n.store(x.dtype, a.real(2));
    return one_output(broadcast_binary(a, x, a.tensor(1), a.out_dtype(),
                                                [&](double v, double m) { return m != 0.0 ? value : v; }));
  });
  k.add("aten.where.Scalar", [n](const KernelArgs& a) {
    DType t = a.out_dtype();
    double yes = n.store(t, a.real(1)), no = n.store(t, a.real(2));
    return one_output(unary(a.tensor(0), t, [&](double c) { return c != 0.0 ? yes : no; }));
  });
  k.add("aten.where.self", [n](const KernelArgs& a) {
    const Tensor &c = a.tensor(0), &x = a.tensor(1), &y = a.tensor(2);
    auto xy = broadcast_shapes(x.shape, y.shape);
    auto shape = xy ? broadcast_shapes(c.shape, *xy) : std::nullopt;
    if (!shape) refuse(a, "where: condition and values do not broadcast");
    DType t = a.out_dtype();
    Tensor r(t, *shape);
    const size_t rank = shape->size();
    std::array<std::vector<int64_t>, 3> src{broadcast_strides(c.shape, rank), broadcast_strides(x.shape, rank),
                                            broadcast_strides(y.shape, rank)};
    double* out = r.data.data();
    for_each_offsets(*shape, src, [&](const std::array<int64_t, 3>& off) {
      *out++ = n.store(t, c.data[off[0]] != 0.0 ? x.data[off[1]] : y.data[off[2]]);
    });
    return one_output(std::move(r));
  });
  k.add("aten._to_copy.default", [n](const KernelArgs& a) {
    DType t = a.kwarg_dtype("dtype").value_or(a.out_dtype());
    return one_output(unary(a.tensor(0), t, [&](double x) { return n.store(t, x); }));
  });
  k.add("aten.ones.default", [](const KernelArgs& a) { return one_output(filled(a, 1.0)); });
  k.add("aten.zeros.default", [](const KernelArgs& a) { return one_output(filled(a, 0.0)); });
  k.add("aten.full.default", [](const KernelArgs& a) { return one_output(filled(a, a.real(1))); });
  k.add("aten.zeros_like.default", [](const KernelArgs& a) {
    DType t = a.kwarg_dtype("dtype").value_or(a.tensor(0).dtype);
    return one_output(Tensor(t, a.tensor(0).shape, 0.0));
  });
  k.add("aten.tril.default", [](const KernelArgs& a) {
    const Tensor& x = a.tensor(0);
    int64_t diagonal = a.integer(1, 0);
    if (x.dim() < 2) refuse(a, "tril needs a tensor of rank >= 2");
    Tensor r = x;
    int64_t rows = x.size(-2), cols = x.size(-1);
    for (int64_t f = 0; f < r.numel(); ++f) {
      int64_t j = f % cols, i = (f / cols) % rows;
      if (j - i > diagonal) r.data[f] = 0.0;
    }
    return one_output(std::move(r));
  });
}

}  // namespace sdpa::ref
