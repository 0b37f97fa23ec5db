// ATen ops as a kernel set: one of the two files that include ATen.
#include "backends/common/libtorch_kernels.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <vector>

#include "harness/case/tensor_data.h"

namespace sdpa {
namespace {

// oneDNN (LibTorch's bf16 matmul) JIT-emits AMX tile instructions on a CPU
// that reports AMX; where the kernel has not granted the tile state (seen in
// virtual machines) they raise SIGILL and end the campaign. Capping oneDNN at
// AVX-512 BF16 before its first use keeps the same op on a path every such
// CPU runs; a value the user set wins.
const bool kOneDnnIsaCapped = [] {
  setenv("DNNL_MAX_CPU_ISA", "AVX512_CORE_BF16", /*overwrite=*/0);
  setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16", /*overwrite=*/0);
  return true;
}();

at::ScalarType to_at(DType t) {
  switch (t) {
    case DType::f64: return at::kDouble;
    case DType::f32: return at::kFloat;
    case DType::f16: return at::kHalf;
    case DType::bf16: return at::kBFloat16;
    case DType::i8: return at::kChar;
    case DType::i32: return at::kInt;
    case DType::i64: return at::kLong;
    case DType::b8: return at::kBool;
  }
  return at::kDouble;
}

// An f64 input is read in place: no kernel here writes its inputs (every
// op is out of place), and the result is copied out before the input dies.
// Another dtype is converted element by element with static_cast, the cast
// ATen's own conversion applies (a plain loop: a TensorIterator and its
// dispatch cost more than the copy at these sizes).
at::Tensor to_aten(const Tensor& t) {
  if (t.dtype == DType::f64) return at::from_blob(const_cast<double*>(t.data.data()), t.shape, at::kDouble);
  at::Tensor a = at::empty(t.shape, at::TensorOptions().dtype(to_at(t.dtype)));
  AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, a.scalar_type(), "to_aten", [&] {
    scalar_t* out = a.data_ptr<scalar_t>();
    for (size_t i = 0; i < t.data.size(); ++i) out[i] = static_cast<scalar_t>(t.data[i]);
  });
  return a;
}

// A view's n elements in row-major order, read through its strides: one
// pass, where contiguous() would first copy it with an ATen op of its own.
template <typename S>
void read_strided(const at::Tensor& a, size_t n, std::vector<double>& out) {
  const S* base = a.data_ptr<S>();
  const at::IntArrayRef sizes = a.sizes(), strides = a.strides();
  std::vector<int64_t> index(sizes.size(), 0);
  int64_t offset = 0;
  out.resize(n);
  double* to = out.data();  // written in place: a push_back per element was not always inlined
  for (size_t i = 0; i < n; ++i) {
    to[i] = static_cast<double>(base[offset]);
    // The next index, the last dim fastest; a dim that wraps goes back to 0.
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (sizes[d] - 1);
      index[d] = 0;
    }
  }
}

// The result converted into the harness tensor: every element of these
// types is exact in double. A contiguous result's vector is built from its
// elements; a view's (transpose, expand) is sized, then written through the
// view's strides.
Tensor from_aten(const at::Tensor& a, DType t) {
  Tensor out;
  out.dtype = t;
  out.shape = a.sizes().vec();
  const auto n = static_cast<size_t>(numel_of(out.shape));
  if (n == 0) return out;
  AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, a.scalar_type(), "from_aten", [&] {
    if (!a.is_contiguous()) return read_strided<scalar_t>(a, n, out.data);
    const scalar_t* in = a.data_ptr<scalar_t>();
    out.data.assign(in, in + n);  // each element constructed as static_cast<double>(in[i])
  });
  return out;
}

using AtenFn = std::function<at::Tensor(const KernelArgs&)>;
using Finish = void (*)(const KernelArgs&, Tensor&);

// Wraps an ATen computation, its result then passed to `finish` where
// given: its c10::Error (an op without a kernel for a dtype, a shape ATen
// rejects) becomes an `unsupported` result.
KernelFn wrap(AtenFn fn, Finish finish = nullptr) {
  return [fn, finish](const KernelArgs& a) {
    // No autograd: its dispatch keys are skipped for every op of the call.
    c10::InferenceMode inference;
    try {
      Tensor out = from_aten(fn(a), a.out_dtype());
      if (finish) finish(a, out);
      return one_output(std::move(out));
    } catch (const c10::Error& e) {
      std::string msg = e.what_without_backtrace();
      throw KernelError(KernelError::Kind::unsupported, "LibTorch: " + msg.substr(0, msg.find('\n')));
    }
  };
}

at::Tensor T(const KernelArgs& a, size_t i) { return to_aten(a.tensor(i)); }

at::Tensor safe_softmax(const at::Tensor& x, int64_t dim) {
  at::Tensor all_masked = at::eq(x, -INFINITY).all(dim, /*keepdim=*/true);
  return at::where(all_masked, at::zeros({}, x.options()), at::softmax(x, dim));
}

// repeat_interleave(x, repeats, dim) as ATen's unsqueeze, expand and
// reshape: each slice along dim repeated in place, the elements and order of
// ATen's own op, which builds a repeats tensor, its cumsum and an
// index_select (some ten ops: 4% of an aten case, with GQA's two calls).
// A 0-d tensor, a negative count or a dim out of range go to ATen's op, for
// its result or its error.
at::Tensor repeat_interleave(const at::Tensor& x, int64_t repeats, int64_t dim) {
  const int64_t rank = x.dim();
  if (rank == 0 || repeats < 0 || dim < -rank || dim >= rank) return at::repeat_interleave(x, repeats, dim);
  const auto d = static_cast<size_t>(dim < 0 ? dim + rank : dim);
  std::vector<int64_t> expanded = x.sizes().vec(), out = x.sizes().vec();
  expanded.insert(expanded.begin() + static_cast<std::ptrdiff_t>(d) + 1, repeats);
  out[d] *= repeats;
  return x.unsqueeze(static_cast<int64_t>(d) + 1).expand(expanded).reshape(out);
}

// aten._safe_softmax's rows whose every element is -inf (in the input's
// dtype, converted as to_aten converts) set to 0 in the softmax's output,
// where softmax leaves NaN: what safe_softmax's eq, all and where give,
// found on the harness tensor (those three ATen ops cost more than the
// softmax at these sizes).
void zero_fully_masked_rows(const KernelArgs& a, Tensor& out) {
  const Tensor& x = a.tensor(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  // In range, as softmax took it; a 0-d tensor (dim 0 or -1) is one row of one.
  const int64_t d = rank == 0 ? 0 : a.integer(1) < 0 ? a.integer(1) + rank : a.integer(1);
  int64_t outer = 1, inner = 1;
  const int64_t n = rank == 0 ? 1 : x.shape.at(static_cast<size_t>(d));
  for (int64_t i = 0; i < d; ++i) outer *= x.shape[static_cast<size_t>(i)];
  for (int64_t i = d + 1; i < rank; ++i) inner *= x.shape[static_cast<size_t>(i)];
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, to_at(x.dtype), "_safe_softmax", [&] {
    auto minus_inf = [&](int64_t e) {
      return static_cast<double>(static_cast<scalar_t>(x.data[static_cast<size_t>(e)])) == -INFINITY;
    };
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t first = o * n * inner + i;
        bool all = true;
        for (int64_t j = 0; j < n && all; ++j) all = minus_inf(first + j * inner);
        for (int64_t j = 0; all && j < n; ++j) out.data[static_cast<size_t>(first + j * inner)] = 0.0;
      }
  });
}

// The keep mask drawn from the case's "dropout" stream (ATen's own RNG
// could not be replayed), applied as ATen's dropout does: x * (keep / (1-p)).
at::Tensor keep_mask(const KernelArgs& a, const at::Tensor& x, double p) {
  CounterStream stream(a.ctx.data_seed, "dropout");
  std::vector<double> keep(static_cast<size_t>(x.numel()));
  for (size_t i = 0; i < keep.size(); ++i) keep[i] = dropout_keep(stream, i, p) ? 1.0 : 0.0;
  return at::from_blob(keep.data(), x.sizes(), at::kDouble).to(at::kBool);
}

at::Tensor dropout(const at::Tensor& x, const at::Tensor& keep, double p) {
  return at::mul(x, at::div(keep.to(x.scalar_type()), 1.0 - p));
}

// The math composition in the inputs' dtype, for calls LibTorch 1.13's
// fused op cannot take (explicit scale, GQA, dropout with our RNG stream).
at::Tensor composed_sdpa(const KernelArgs& a) {
  at::Tensor q = T(a, 0), k = T(a, 1), v = T(a, 2);
  double p = a.real(4, 0.0);
  bool causal = a.flag(5, false);
  int64_t hq = q.size(-3), hkv = k.size(-3);
  if (a.kwarg_flag("enable_gqa", false) && hq != hkv) {
    k = repeat_interleave(k, hq / hkv, -3);
    v = repeat_interleave(v, hq / hkv, -3);
  }
  double scale = a.kwarg_real("scale").value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  double sf = std::sqrt(std::fabs(scale));
  at::Tensor attn = at::matmul(at::mul(q, scale < 0 ? -sf : sf), at::mul(k.transpose(-2, -1), sf));
  auto to_additive = [&](const at::Tensor& keep) {
    return at::zeros_like(keep, attn.options()).masked_fill(at::logical_not(keep), -INFINITY);
  };
  if (causal) attn = attn + to_additive(at::ones({q.size(-2), k.size(-2)}, at::kBool).tril());
  if (a.has(3)) {
    at::Tensor m = T(a, 3);
    attn = attn + (m.scalar_type() == at::kBool ? to_additive(m) : m.to(attn.scalar_type()));
  }
  attn = safe_softmax(attn, -1);
  if (p > 0) attn = dropout(attn, keep_mask(a, attn, p), p);
  return at::matmul(attn, v);
}

// attn_mask, dropout_p and is_causal by position or keyword (KernelArgs::bound).
at::Tensor sdpa(const KernelArgs& call) {
  std::optional<KernelArgs> storage;
  const KernelArgs& a = call.bound(3, {"attn_mask", "dropout_p", "is_causal"}, storage);
  int64_t hq = a.tensor(0).size(-3), hkv = a.tensor(1).size(-3);
  bool grouped = a.kwarg_flag("enable_gqa", false) && hq != hkv && hkv != 1;
  if (a.kwarg_real("scale") || a.real(4, 0.0) > 0 || grouped) return composed_sdpa(a);
  // LibTorch 1.13's own op: default scale, no GQA, NaN for fully masked rows.
  const Tensor* m = a.optional_tensor(3);
  c10::optional<at::Tensor> mask;
  if (m) mask = to_aten(*m);
  return std::get<0>(at::_scaled_dot_product_attention(T(a, 0), T(a, 1), T(a, 2), mask, 0.0,
                                                        false, a.flag(5, false)));
}

KernelSet build() {
  // The tensors here are tiny: intra-op threads only add overhead, and one
  // thread keeps the throughput figures per core honest.
  at::set_num_threads(1);
  KernelSet k("libtorch");
  k.add("aten.transpose.int", wrap([](const KernelArgs& a) { return T(a, 0).transpose(a.integer(1), a.integer(2)); }));
  k.add("aten.permute.default", wrap([](const KernelArgs& a) { return T(a, 0).permute(a.ints(1)); }));
  for (const char* op : {"aten.contiguous.default", "aten.clone.default", "aten.alias.default"})
    k.add(op, wrap([](const KernelArgs& a) { return T(a, 0).contiguous(); }));
  for (const char* op : {"aten.reshape.default", "aten.view.default", "aten._unsafe_view.default"})
    k.add(op, wrap([](const KernelArgs& a) { return T(a, 0).reshape(a.ints(1)); }));
  k.add("aten.expand.default", wrap([](const KernelArgs& a) { return T(a, 0).expand(a.ints(1)); }));
  k.add("aten.unsqueeze.default", wrap([](const KernelArgs& a) { return T(a, 0).unsqueeze(a.integer(1)); }));
  k.add("aten.squeeze.dims", wrap([](const KernelArgs& a) {
    at::Tensor x = T(a, 0);
    std::vector<int64_t> shape, dims = a.ints(1);
    for (int64_t d = 0; d < x.dim(); ++d) {
      bool drop = false;
      for (int64_t s : dims) drop = drop || ((s < 0 ? s + x.dim() : s) == d && x.size(d) == 1);
      if (!drop) shape.push_back(x.size(d));
    }
    return x.reshape(shape);
  }));
  k.add("aten._to_copy.default", wrap([](const KernelArgs& a) { return T(a, 0).to(to_at(a.out_dtype())); }));
  k.add("aten.repeat_interleave.self_int",
        wrap([](const KernelArgs& a) { return repeat_interleave(T(a, 0), a.integer(1), a.integer(2)); }));
  k.add("aten.repeat.default", wrap([](const KernelArgs& a) { return T(a, 0).repeat(a.ints(1)); }));
  k.add("aten.slice.Tensor", wrap([](const KernelArgs& a) {
    at::Tensor x = T(a, 0);
    const int64_t dim = a.integer(1, 0);
    return at::slice(x, dim, a.has(2) ? c10::optional<int64_t>(a.integer(2)) : c10::nullopt,
                     a.has(3) ? c10::optional<int64_t>(a.integer(3)) : c10::nullopt, a.integer(4, 1)).contiguous();
  }));
  k.add("aten.select.int", wrap([](const KernelArgs& a) { return T(a, 0).select(a.integer(1), a.integer(2)).contiguous(); }));
  // Tensor.item() as the 0-d tensor the graph carries; "binds" as in the reference kernel.
  k.add("aten._local_scalar_dense.default", wrap([](const KernelArgs& a) {
    at::Tensor x = T(a, 0);
    if (x.numel() != 1) throw KernelError(KernelError::Kind::unsupported, "a Tensor with several elements is not a Scalar");
    if (const Value* b = a.kwarg("binds"); b && std::holds_alternative<int64_t>(*b) &&
                                           x.item<double>() != static_cast<double>(std::get<int64_t>(*b)))
      throw GraphError("%" + a.node.name + ": the element differs from the symbol it binds at this run");
    return x.reshape({});
  }));
  k.add("aten.mul.Scalar", wrap([](const KernelArgs& a) { return at::mul(T(a, 0), a.real(1)); }));
  k.add("aten.div.Scalar", wrap([](const KernelArgs& a) { return at::div(T(a, 0), a.real(1)); }));
  k.add("aten.add.Scalar", wrap([](const KernelArgs& a) { return at::add(T(a, 0), a.real(1)); }));
  k.add("aten.mul.Tensor", wrap([](const KernelArgs& a) { return at::mul(T(a, 0), T(a, 1)); }));
  k.add("aten.add.Tensor", wrap([](const KernelArgs& a) { return at::add(T(a, 0), T(a, 1)); }));
  k.add("aten.sub.Tensor", wrap([](const KernelArgs& a) { return at::sub(T(a, 0), T(a, 1)); }));
  k.add("aten.div.Tensor", wrap([](const KernelArgs& a) { return at::div(T(a, 0), T(a, 1)); }));
  k.add("aten.matmul.default", wrap([](const KernelArgs& a) { return at::matmul(T(a, 0), T(a, 1)); }));
  k.add("aten.bmm.default", wrap([](const KernelArgs& a) { return at::bmm(T(a, 0), T(a, 1)); }));
  k.add("aten.ones.default", wrap([](const KernelArgs& a) { return at::ones(a.ints(0), to_at(a.out_dtype())); }));
  k.add("aten.zeros.default", wrap([](const KernelArgs& a) { return at::zeros(a.ints(0), to_at(a.out_dtype())); }));
  k.add("aten.full.default", wrap([](const KernelArgs& a) { return at::full(a.ints(0), a.real(1), to_at(a.out_dtype())); }));
  k.add("aten.zeros_like.default", wrap([](const KernelArgs& a) { return at::zeros_like(T(a, 0), to_at(a.out_dtype())); }));
  k.add("aten.tril.default", wrap([](const KernelArgs& a) { return at::tril(T(a, 0), a.integer(1, 0)); }));
  k.add("aten.logical_not.default", wrap([](const KernelArgs& a) { return at::logical_not(T(a, 0)); }));
  k.add("aten.masked_fill.Scalar", wrap([](const KernelArgs& a) { return at::masked_fill(T(a, 0), T(a, 1), a.real(2)); }));
  k.add("aten.where.self", wrap([](const KernelArgs& a) { return at::where(T(a, 0), T(a, 1), T(a, 2)); }));
  k.add("aten.where.Scalar", wrap([](const KernelArgs& a) {
    at::Tensor c = T(a, 0);
    return at::where(c, at::full({}, a.real(1), to_at(a.out_dtype())), at::full({}, a.real(2), to_at(a.out_dtype())));
  }));
  k.add("aten._softmax.default", wrap([](const KernelArgs& a) { return at::_softmax(T(a, 0), a.integer(1), false); }));
  k.add("aten.softmax.int", wrap([](const KernelArgs& a) { return at::softmax(T(a, 0), a.integer(1)); }));
  k.add("aten._safe_softmax.default",
        wrap([](const KernelArgs& a) { return at::softmax(T(a, 0), a.integer(1)); }, zero_fully_masked_rows));
  k.add("aten.scaled_dot_product_attention.default", wrap(sdpa));
  // native_dropout returns (output, mask): two outputs, wrapped by hand.
  k.add("aten.native_dropout.default", [](const KernelArgs& a) {
    c10::InferenceMode inference;
    try {
      at::Tensor x = T(a, 0);
      double p = a.real(1);
      bool active = a.flag(2, true) && p > 0;
      at::Tensor keep = active ? keep_mask(a, x, p) : at::ones_like(x, at::kBool);
      at::Tensor out = active ? dropout(x, keep, p) : x;
      std::vector<Tensor> outputs;  // built in place: a braced list would copy both
      outputs.push_back(from_aten(out, a.out_dtype(0)));
      outputs.push_back(from_aten(keep, DType::b8));
      return outputs;
    } catch (const c10::Error& e) {
      throw KernelError(KernelError::Kind::unsupported, std::string("LibTorch: ") + e.what_without_backtrace());
    }
  });
  return k;
}

}  // namespace

std::vector<DType> libtorch_dtypes() { return {DType::f32, DType::bf16, DType::f64}; }

const KernelSet& libtorch_kernels() {
  static const KernelSet k = build();
  return k;
}

}  // namespace sdpa
