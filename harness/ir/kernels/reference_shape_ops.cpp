// Data-movement ops of the reference kernel sets: exact in every numerics.
#include "harness/ir/kernels/reference_common.h"

namespace sdpa::ref {
namespace {

Tensor permute(const Tensor& x, const std::vector<int64_t>& perm) {
  Tensor r = x;
  for (size_t d = 0; d < perm.size(); ++d) r.shape[d] = x.shape[perm[d]];
  auto xs = strides_of(x.shape);
  std::array<std::vector<int64_t>, 1> src{std::vector<int64_t>(perm.size())};
  for (size_t d = 0; d < perm.size(); ++d) src[0][d] = xs[perm[d]];
  double* out = r.data.data();
  const double* in = x.data.data();
  for_each_offsets(r.shape, src, [&](const std::array<int64_t, 1>& off) { *out++ = in[off[0]]; });
  return r;
}

Tensor reshape(const KernelArgs& a, const Tensor& x, std::vector<int64_t> shape) {
  int64_t known = 1, infer = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) infer = static_cast<int64_t>(d);
    else known *= shape[d];
  }
  if (infer >= 0 && known > 0) shape[infer] = x.numel() / known;
  if (numel_of(shape) != x.numel())
    refuse(a, "shape " + shape_str(shape) + " is invalid for input of size " +
                  std::to_string(x.numel()));
  Tensor r = x;
  r.shape = shape;
  return r;
}

Tensor expand(const KernelArgs& a, const Tensor& x, std::vector<int64_t> shape) {
  size_t skip = shape.size() - x.shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t have = d < skip ? 1 : x.shape[d - skip];
    if (shape[d] == -1) shape[d] = have;
    if (have != 1 && have != shape[d])
      refuse(a, "expand: size " + std::to_string(have) + " cannot expand to " +
                    std::to_string(shape[d]));
  }
  Tensor r(x.dtype, shape);
  r.qparams = x.qparams;
  std::array<std::vector<int64_t>, 1> src{broadcast_strides(x.shape, shape.size())};
  double* out = r.data.data();
  const double* in = x.data.data();
  for_each_offsets(shape, src, [&](const std::array<int64_t, 1>& off) { *out++ = in[off[0]]; });
  return r;
}

std::vector<Tensor> one(Tensor t) { return {std::move(t)}; }

}  // namespace

void add_shape_kernels(KernelSet& k, Num) {
  k.add("aten.transpose.int", [](const KernelArgs& a) {
    const Tensor& x = a.tensor(0);
    std::vector<int64_t> perm(x.dim());
    for (int64_t d = 0; d < x.dim(); ++d) perm[d] = d;
    std::swap(perm[wrap_dim(a.integer(1), x.dim(), a.node)], perm[wrap_dim(a.integer(2), x.dim(), a.node)]);
    return one(permute(x, perm));
  });
  k.add("aten.permute.default", [](const KernelArgs& a) {
    const Tensor& x = a.tensor(0);
    auto perm = a.ints(1);
    if (static_cast<int64_t>(perm.size()) != x.dim()) refuse(a, "permute: wrong number of dims");
    for (auto& d : perm) d = wrap_dim(d, x.dim(), a.node);
    return one(permute(x, perm));
  });
  for (const char* op : {"aten.contiguous.default", "aten.clone.default", "aten.alias.default"})
    k.add(op, [](const KernelArgs& a) { return one(a.tensor(0)); });
  for (const char* op : {"aten.reshape.default", "aten.view.default", "aten._unsafe_view.default"})
    k.add(op, [](const KernelArgs& a) { return one(reshape(a, a.tensor(0), a.ints(1))); });
  k.add("aten.expand.default", [](const KernelArgs& a) { return one(expand(a, a.tensor(0), a.ints(1))); });
  k.add("aten.unsqueeze.default", [](const KernelArgs& a) {
    Tensor r = a.tensor(0);
    int64_t d = wrap_dim(a.integer(1), r.dim() + 1, a.node);
    r.shape.insert(r.shape.begin() + d, 1);
    return one(r);
  });
  k.add("aten.squeeze.dims", [](const KernelArgs& a) {
    Tensor r = a.tensor(0);
    std::vector<bool> drop(r.dim(), false);
    for (int64_t d : a.ints(1)) {
      int64_t w = wrap_dim(d, r.dim(), a.node);
      drop[w] = r.shape[w] == 1;  // squeeze leaves non-1 dims alone
    }
    Shape s;
    for (int64_t d = 0; d < r.dim(); ++d)
      if (!drop[d]) s.push_back(r.shape[d]);
    r.shape = s;
    return one(r);
  });
  k.add("aten.repeat.default", [](const KernelArgs& a) {
    const Tensor& x = a.tensor(0);
    auto reps = a.ints(1);
    if (reps.size() < x.shape.size()) refuse(a, "repeat: fewer repeats than dims");
    Shape in(reps.size() - x.shape.size(), 1);
    in.insert(in.end(), x.shape.begin(), x.shape.end());
    Shape out(reps.size());
    for (size_t d = 0; d < reps.size(); ++d) out[d] = in[d] * reps[d];
    Tensor r(x.dtype, out);
    auto xs = strides_of(in);
    int64_t flat = 0;
    for_each_index(out, [&](const std::vector<int64_t>& idx) {
      int64_t off = 0;
      for (size_t d = 0; d < idx.size(); ++d) off += (idx[d] % in[d]) * xs[d];
      r.data[flat++] = x.data[off];
    });
    return one(std::move(r));
  });
  k.add("aten.repeat_interleave.self_int", [](const KernelArgs& a) {
    const Tensor& x = a.tensor(0);
    int64_t repeats = a.integer(1);
    int64_t dim = wrap_dim(a.integer(2), x.dim(), a.node);
    int64_t outer = 1, inner = 1, n = x.shape[dim];
    for (int64_t d = 0; d < dim; ++d) outer *= x.shape[d];
    for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.shape[d];
    Tensor r = x;
    r.shape[dim] = n * repeats;
    r.data.assign(static_cast<size_t>(outer * n * repeats * inner), 0.0);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < n * repeats; ++i)
        for (int64_t e = 0; e < inner; ++e)
          r.data[(o * n * repeats + i) * inner + e] = x.data[(o * n + i / repeats) * inner + e];
    return one(r);
  });
}

}  // namespace sdpa::ref
