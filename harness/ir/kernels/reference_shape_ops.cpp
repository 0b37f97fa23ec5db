// Data-movement ops of the reference kernel sets: exact in every numerics.
#include "harness/ir/kernels/reference_common.h"

namespace sdpa::ref {
namespace {

Tensor permute(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape shape = x.shape;
  for (size_t d = 0; d < perm.size(); ++d) shape[d] = x.shape[perm[d]];
  Tensor r(x.dtype, shape);
  r.qparams = x.qparams;
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

// constant_pad_nd(x, pad, value) with pad = [left, right] of the last dim
// only (what pad_last_dim emits): right >= 0 new columns of `value`.
Tensor pad_last_dim(const KernelArgs& a, const Tensor& x, const std::vector<int64_t>& pad, double value) {
  if (pad.size() != 2 || pad[0] != 0 || pad[1] < 0 || x.dim() == 0)
    refuse(a, "constant_pad_nd: only [0, n >= 0] on the last dim is modeled, got " + shape_str(pad));
  const int64_t cols = x.shape.back(), wide = cols + pad[1];
  Shape s = x.shape;
  s.back() = wide;
  Tensor r(x.dtype, s);
  for (int64_t row = 0; row * wide < r.numel(); ++row)
    for (int64_t j = 0; j < wide; ++j) r.data[row * wide + j] = j < cols ? x.data[row * cols + j] : value;
  return r;
}

// slice.Tensor(x, dim, start, end) with step 1 on the last dim (what
// post_process_flash_output emits); end is clamped to the size, as aten does.
Tensor slice_last_dim(const KernelArgs& a, const Tensor& x, int64_t dim, int64_t start, int64_t end) {
  if (x.dim() == 0 || wrap_dim(dim, x.dim(), a.node) != x.dim() - 1 || start < 0 || end < start)
    refuse(a, "slice: only [start, end) of the last dim is modeled");
  const int64_t cols = x.shape.back(), stop = std::min(end, cols), keep = std::max<int64_t>(stop - start, 0);
  Shape s = x.shape;
  s.back() = keep;
  Tensor r(x.dtype, s);
  for (int64_t row = 0; row * keep < r.numel(); ++row)
    for (int64_t j = 0; j < keep; ++j) r.data[row * keep + j] = x.data[row * cols + start + j];
  return r;
}

// Elements [start, end) step `step` of dim `dim` (aten.slice.Tensor): a
// negative bound counts from the end, both are clamped to [0, size].
Tensor slice(const KernelArgs& a, const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (step < 1) refuse(a, "slice step must be positive");
  const int64_t size = x.shape[dim];
  auto clamp = [size](int64_t b) { return std::min(std::max(b < 0 ? b + size : b, int64_t{0}), size); };
  start = clamp(start);
  end = std::max(clamp(end), start);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.shape[d];
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.shape[d];
  Tensor r = x;
  r.shape[dim] = (end - start + step - 1) / step;
  r.data.assign(static_cast<size_t>(outer * r.shape[dim] * inner), 0.0);
  int64_t flat = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = start; i < end; i += step)
      for (int64_t e = 0; e < inner; ++e) r.data[flat++] = x.data[(o * size + i) * inner + e];
  return r;
}

}  // namespace

void add_shape_kernels(KernelSet& k, Num) {
  k.add("aten.transpose.int", [](const KernelArgs& a) {
    const Tensor& x = a.tensor(0);
    std::vector<int64_t> perm(x.dim());
    for (int64_t d = 0; d < x.dim(); ++d) perm[d] = d;
    std::swap(perm[wrap_dim(a.integer(1), x.dim(), a.node)], perm[wrap_dim(a.integer(2), x.dim(), a.node)]);
    return one_output(permute(x, perm));
  });
  k.add("aten.permute.default", [](const KernelArgs& a) {
    const Tensor& x = a.tensor(0);
    auto perm = a.ints(1);
    if (static_cast<int64_t>(perm.size()) != x.dim()) refuse(a, "permute: wrong number of dims");
    for (auto& d : perm) d = wrap_dim(d, x.dim(), a.node);
    return one_output(permute(x, perm));
  });
  for (const char* op : {"aten.contiguous.default", "aten.clone.default", "aten.alias.default"})
    k.add(op, [](const KernelArgs& a) { return one_output(a.tensor(0)); });
  for (const char* op : {"aten.reshape.default", "aten.view.default", "aten._unsafe_view.default"})
    k.add(op, [](const KernelArgs& a) { return one_output(reshape(a, a.tensor(0), a.ints(1))); });
  k.add("aten.expand.default", [](const KernelArgs& a) { return one_output(expand(a, a.tensor(0), a.ints(1))); });
  k.add("aten.unsqueeze.default", [](const KernelArgs& a) {
    Tensor r = a.tensor(0);
    int64_t d = wrap_dim(a.integer(1), r.dim() + 1, a.node);
    r.shape.insert(r.shape.begin() + d, 1);
    return one_output(std::move(r));
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
    return one_output(std::move(r));
  });
  k.add("aten.constant_pad_nd.default", [](const KernelArgs& a) {
    const double value = a.real(2, 0.0);
    return one_output(pad_last_dim(a, a.tensor(0), a.ints(1), value));
  });
  k.add("aten.slice.Tensor", [](const KernelArgs& a) {
    return one_output(slice_last_dim(a, a.tensor(0), a.integer(1), a.integer(2), a.integer(3)));
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
    return one_output(std::move(r));
  });
  k.add("aten.slice.Tensor", [](const KernelArgs& a) {
    const Tensor& x = a.tensor(0);
    const int64_t dim = wrap_dim(a.integer(1, 0), x.dim(), a.node);
    const int64_t size = x.shape[dim];
    return one_output(slice(a, x, dim, a.has(2) ? a.integer(2) : 0, a.has(3) ? a.integer(3) : size, a.integer(4, 1)));
  });
  k.add("aten.select.int", [](const KernelArgs& a) {
    const Tensor& x = a.tensor(0);
    const int64_t dim = wrap_dim(a.integer(1), x.dim(), a.node);
    int64_t index = a.integer(2);
    if (index < 0) index += x.shape[dim];
    if (index < 0 || index >= x.shape[dim])
      refuse(a, "select(): index " + std::to_string(a.integer(2)) + " out of range for dim of size " +
                    std::to_string(x.shape[dim]));
    Tensor r = slice(a, x, dim, index, index + 1, 1);
    r.shape.erase(r.shape.begin() + dim);
    return one_output(std::move(r));
  });
  // Tensor.item(): the one element as a 0-d tensor. Keyword "binds" names
  // the unbacked symbol export binds to it (FX's unbacked_bindings): at a
  // run the element must equal that symbol's value.
  k.add("aten._local_scalar_dense.default", [](const KernelArgs& a) {
    Tensor r = a.tensor(0);
    if (r.numel() != 1) refuse(a, "a Tensor with " + std::to_string(r.numel()) + " elements cannot be converted to Scalar");
    r.shape.clear();
    if (const Value* b = a.kwarg("binds"); b && std::holds_alternative<int64_t>(*b) &&
                                           static_cast<double>(std::get<int64_t>(*b)) != r.data[0])
      throw GraphError("%" + a.node.name + ": the element is " + std::to_string(r.data[0]) +
                       " but the symbol it binds is " + std::to_string(std::get<int64_t>(*b)) + " at this run");
    return one_output(std::move(r));
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
    return one_output(std::move(r));
  });
}

}  // namespace sdpa::ref
