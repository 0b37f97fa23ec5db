// Models the ExecuTorch cortex_m runtime ops (backends/cortex_m/ops/op_*.cpp)
// on the CMSIS-NN models, semantics/cortex-m-and-xnnpack.md §1.7 and §2.
#include "backends/cortex_m/cmsis_kernels.h"

#include <cmath>
#include <limits>

#include "backends/cortex_m/cmsis/batch_matmul_s8.h"
#include "backends/cortex_m/cmsis/cmsis_error.h"
#include "backends/cortex_m/cmsis/elementwise_mul_s8.h"
#include "backends/cortex_m/cmsis/fully_connected_s8.h"
#include "backends/cortex_m/cmsis/lowering_params.h"
#include "backends/cortex_m/cmsis/quantize.h"
#include "backends/cortex_m/cmsis/softmax_s8.h"
#include "backends/cortex_m/cortex_m_ops.h"
#include "backends/cortex_m/linear_kernel.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::cortex_m {
namespace {

using Kernel = std::function<Tensor(const KernelArgs&)>;

[[noreturn]] void refuse(const std::string& why) { throw KernelError(KernelError::Kind::recoverable, why); }

// The CMSIS refusals as the harness's kernel errors.
KernelFn guarded(Kernel k) {
  return [k](const KernelArgs& a) -> std::vector<Tensor> {
    try {
      return one_output(k(a));
    } catch (const cmsis::CmsisUndefined& e) {
      throw KernelError(KernelError::Kind::recoverable, "undefined behaviour in " + cmsis::describe(e.fault()));
    } catch (const cmsis::CmsisCheckFailed& e) {
      throw KernelError(KernelError::Kind::fatal, "ET_CHECK_MSG aborts: " + cmsis::describe(e.fault()));
    }
  };
}

std::vector<int8_t> codes(const Tensor& t, const char* operand) {
  if (t.dtype != DType::i8) refuse(std::string(operand) + " is " + dtype_name(t.dtype) + ", the op takes int8");
  std::vector<int8_t> out(t.data.size());
  for (size_t i = 0; i < t.data.size(); ++i) {
    const double v = t.data[i];
    // In range first: the int conversion is then defined (and cheaper than floor).
    if (!(v >= -128 && v <= 127) || v != static_cast<double>(static_cast<int>(v)))
      throw GraphError(std::string(operand) + "[" + std::to_string(i) + "] = " + std::to_string(v) + " is not an int8");
    out[i] = static_cast<int8_t>(v);
  }
  return out;
}

Tensor int8_result(const KernelArgs& a, const Shape& shape, const std::vector<int8_t>& q) {
  Tensor r(DType::i8, shape);
  for (size_t i = 0; i < q.size(); ++i) r.data[i] = q[i];
  r.qparams = a.node.outputs.at(0).qparams;
  return r;
}

int32_t i32(const KernelArgs& a, size_t i) {
  const int64_t v = a.integer(i);
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    throw KernelError(KernelError::Kind::fatal, "ET_CHECK_MSG aborts: argument " + std::to_string(i) + " of %" +
                                                    a.node.name + " (" + std::to_string(v) + ") is outside int32");
  return static_cast<int32_t>(v);
}

void check_bmm_shapes(const Tensor& l, const Tensor& r) {
  if (l.dim() != 3 || r.dim() != 3 || l.shape[0] != r.shape[0] || l.shape[2] != r.shape[2])
    refuse("quantized_batch_matmul takes lhs [B,M,K] and transposed rhs [B,N,K]; got " + shape_str(l.shape) + " and " +
           shape_str(r.shape));
}

int64_t last_dim(const KernelArgs& a, const Tensor& x) {
  const int64_t dim = a.integer(1);
  if (x.dim() == 0 || (dim != -1 && dim != x.dim() - 1))
    refuse("softmax: only the last dim is supported (dim " + std::to_string(dim) + " of rank " +
           std::to_string(x.dim()) + ")");
  return x.shape.back();
}

// is_channel_broadcast of cortex_m_ops_common.h: both 4-D, equal size(1), and
// one operand channels-only (its numel is its size(1)).
bool is_channel_broadcast(const Tensor& a, const Tensor& b) {
  if (a.dim() != 4 || b.dim() != 4 || a.shape[1] != b.shape[1]) return false;
  return a.numel() == a.shape[1] || b.numel() == b.shape[1];
}

// op_quantized_mul's operands: equal sizes, or a channel broadcast, where the
// smaller operand is swapped to second place (with its zero point) and reread
// every size(1) elements of the larger one, the layout the quantizer demands
// (channels-last); anything else fails validate_cmsis_nn_tensor_requirements.
struct MulOperands {
  const Tensor *first, *second;
  bool swapped = false;
  int64_t muls_per_loop = 0;
};

MulOperands mul_operands(const KernelArgs& a) {
  const Tensor &x = a.tensor(0), &y = a.tensor(2);
  if (!is_channel_broadcast(x, y)) {
    if (x.shape != y.shape)
      throw KernelError(KernelError::Kind::fatal, "ET_CHECK_MSG aborts: Input1 and Input2 must have the same sizes (" +
                                                      shape_str(x.shape) + " and " + shape_str(y.shape) + ")");
    return {&x, &y, false, x.numel()};
  }
  const bool swap = x.numel() < y.numel();
  const Tensor& big = swap ? y : x;
  return {&big, swap ? &x : &y, swap, big.shape[1]};
}

// The channels-only operand repeated with period muls_per_loop over n elements.
std::vector<int8_t> repeated(std::vector<int8_t> b, int64_t period, size_t n) {
  if (b.size() == n) return b;  // moved, not copied: the equal-size case of every lowered MUL
  std::vector<int8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = b[i % static_cast<size_t>(period)];
  return out;
}

// ---- cmsis-nn: the int8 models ----

Kernel quantize_int8(cmsis::Isa isa, cmsis::QuantizeRounding rounding) {
  return [isa, rounding](const KernelArgs& a) {
    const Tensor& x = a.tensor(0);
    std::vector<float> xs(x.data.begin(), x.data.end());
    return int8_result(a, x.shape,
                       cmsis::quantize_per_tensor(xs, a.real(1), i32(a, 2), i32(a, 3), i32(a, 4), isa, rounding));
  };
}

Tensor dequantize_int8(const KernelArgs& a) {
  const Tensor& x = a.tensor(0);
  const std::vector<float> f = cmsis::dequantize_per_tensor(codes(x, "input"), a.real(1), i32(a, 2));
  Tensor r(DType::f32, x.shape);
  for (size_t i = 0; i < f.size(); ++i) r.data[i] = f[i];
  return r;
}

Kernel bmm_int8(cmsis::Rounding rounding, cmsis::Overflow overflow) {
  return [rounding, overflow](const KernelArgs& a) {
    const Tensor &l = a.tensor(0), &r = a.tensor(2);
    check_bmm_shapes(l, r);
    // op_quantized_batch_matmul validates no quant param: it casts its
    // integers to int32, and a shift past [-31, 31] reaches arm_nn_requantize.
    cmsis::BatchMatmulParams p;
    p.input_offset = static_cast<int32_t>(a.integer(1));
    p.filter_offset = static_cast<int32_t>(a.integer(3));
    p.output_offset = static_cast<int32_t>(a.integer(4));
    p.multiplier = static_cast<int32_t>(a.integer(5));
    p.shift = static_cast<int32_t>(a.integer(6));
    p.rounding = rounding;
    p.overflow = overflow;
    const cmsis::BatchMatmulDims d{l.shape[0], l.shape[1], r.shape[1], l.shape[2]};
    return int8_result(a, {d.batch, d.m, d.n}, cmsis::arm_batch_matmul_s8(codes(l, "lhs"), codes(r, "rhs_t"), d, p));
  };
}

Kernel mul_int8(cmsis::Rounding rounding, cmsis::Overflow overflow) {
  return [rounding, overflow](const KernelArgs& a) {
    const MulOperands m = mul_operands(a);
    // validate_quantization_params: the inputs' identity (1, 0) always pass.
    cmsis::validate_single_quant_params(a.integer(5), a.integer(6), "Single quant Output");
    cmsis::ElementwiseMulParams p;
    p.input_1_offset = -i32(a, m.swapped ? 3 : 1);
    p.input_2_offset = -i32(a, m.swapped ? 1 : 3);
    p.output_offset = i32(a, 4);
    p.multiplier = i32(a, 5);
    p.shift = i32(a, 6);
    p.rounding = rounding;
    p.overflow = overflow;
    const std::vector<int8_t> first = codes(*m.first, m.swapped ? "input_2" : "input_1");
    const std::vector<int8_t> second =
        repeated(codes(*m.second, m.swapped ? "input_1" : "input_2"), m.muls_per_loop, first.size());
    return int8_result(a, m.first->shape, cmsis::arm_elementwise_mul_s8(first, second, p));
  };
}

Kernel softmax_int8(cmsis::Isa isa, cmsis::FinalShift final_shift) {
  return [isa, final_shift](const KernelArgs& a) {
    const Tensor& x = a.tensor(0);
    const int64_t row = last_dim(a, x);
    // op_softmax.cpp: the params cast to int32 and validated (an abort), then
    // the output zero point checked (a recoverable failure).
    const int32_t mult = static_cast<int32_t>(a.integer(4)), shift = static_cast<int32_t>(a.integer(5));
    cmsis::validate_single_quant_params(mult, shift, "softmax input");
    if (a.integer(3) != kSoftmaxOutZeroPoint)
      refuse("softmax_out: expected output zero_point=-128 (got zero_point=" +
             std::to_string(static_cast<int32_t>(a.integer(3))) + ")");
    const cmsis::SoftmaxParams p{mult, shift, a.integer(6)};
    const int64_t rows = x.numel() / std::max<int64_t>(row, 1);
    return int8_result(a, x.shape, cmsis::arm_softmax_s8(codes(x, "input"), rows, row, p, isa, final_shift));
  };
}

// x [..., K] int8, weight [N, K] int8, bias [N] int32 or none.
void check_linear_shapes(const Tensor& x, const Tensor& w, const Tensor* b) {
  if (x.dim() < 1 || w.dim() != 2 || x.shape.back() != w.shape[1] || (b && (b->dim() != 1 || b->shape[0] != w.shape[0])))
    refuse("quantized_linear takes input [..., K], weight [N, K] and bias [N]; got " + shape_str(x.shape) + ", " +
           shape_str(w.shape) + (b ? " and " + shape_str(b->shape) : std::string()));
}

Shape linear_shape(const Tensor& x, const Tensor& w) {
  Shape s = x.shape;
  s.back() = w.shape[0];
  return s;
}

std::vector<int32_t> bias_codes(const Tensor* b) {
  std::vector<int32_t> out;
  if (!b) return out;
  if (b->dtype != DType::i32) refuse(std::string("bias is ") + dtype_name(b->dtype) + ", the op takes int32");
  for (double v : b->data) {
    if (v != std::floor(v) || v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      throw GraphError("bias value " + std::to_string(v) + " is not an int32");
    out.push_back(static_cast<int32_t>(v));
  }
  return out;
}

Kernel linear_int8(cmsis::Rounding rounding, cmsis::Overflow overflow) {
  return [rounding, overflow](const KernelArgs& a) {
    const Tensor &x = a.tensor(0), &w = a.tensor(1);
    const Tensor* b = a.optional_tensor(2);
    check_linear_shapes(x, w, b);
    // This op's per-tensor form is the model's own; the name is not upstream's text.
    cmsis::validate_single_quant_params(a.integer(5), a.integer(6), "quantized_linear output");
    cmsis::FullyConnectedParams p;
    p.input_offset = i32(a, 3);
    p.output_offset = i32(a, 4);
    p.multiplier = i32(a, 5);
    p.shift = i32(a, 6);
    p.rounding = rounding;
    p.overflow = overflow;
    const int64_t k = w.shape[1], n = w.shape[0];
    const cmsis::FullyConnectedDims d{x.numel() / std::max<int64_t>(k, 1), n, k};
    return int8_result(a, linear_shape(x, w),
                       cmsis::arm_fully_connected_s8(codes(x, "input"), codes(w, "weight"), bias_codes(b), d, p));
  };
}

// ---- exact: the real computation the qparams describe ----

Tensor with_meta(const KernelArgs& a, Tensor t) {
  t.dtype = a.out_dtype();
  t.qparams = a.node.outputs.at(0).qparams;
  return t;
}

Tensor quantize_exact(const KernelArgs& a) {
  Tensor t = a.tensor(0);
  const long double s = a.real(1), zp = a.integer(2);
  for (double& x : t.data) x = static_cast<double>(x / s + zp);
  return with_meta(a, t);
}

Tensor dequantize_exact(const KernelArgs& a) {
  Tensor t = a.tensor(0);
  const long double s = a.real(1), zp = a.integer(2);
  for (double& x : t.data) x = static_cast<double>((x - zp) * s);
  return with_meta(a, t);
}

Tensor bmm_exact(const KernelArgs& a) {
  const Tensor &l = a.tensor(0), &r = a.tensor(2);
  check_bmm_shapes(l, r);
  const long double lo = a.integer(1), ro = a.integer(3), zo = a.integer(4);
  const long double m = static_cast<long double>(*a.kwarg_real("lhs_scale")) * *a.kwarg_real("rhs_scale") /
                        *a.kwarg_real("output_scale");
  const int64_t B = l.shape[0], M = l.shape[1], N = r.shape[1], K = l.shape[2];
  Tensor out(DType::i8, {B, M, N});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        long double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += (l.data[(b * M + i) * K + k] + lo) * (r.data[(b * N + j) * K + k] + ro);
        out.data[(b * M + i) * N + j] = static_cast<double>(acc * m + zo);
      }
  return with_meta(a, out);
}

Tensor mul_exact(const KernelArgs& a) {
  const Tensor &x = a.tensor(0), &y = a.tensor(2);
  if (y.numel() != 1 && y.numel() != x.numel()) refuse("quantized_mul: operand sizes differ");
  const long double zx = a.integer(1), zy = a.integer(3), zo = a.integer(4);
  const long double m = static_cast<long double>(*a.kwarg_real("a_scale")) * *a.kwarg_real("b_scale") /
                        *a.kwarg_real("output_scale");
  Tensor out = x;
  for (int64_t i = 0; i < x.numel(); ++i)
    out.data[i] = static_cast<double>((x.data[i] - zx) * (y.data[y.numel() == 1 ? 0 : i] - zy) * m + zo);
  return with_meta(a, out);
}

Tensor softmax_exact(const KernelArgs& a) {
  const Tensor& x = a.tensor(0);
  const int64_t row = last_dim(a, x);
  const long double s = *a.kwarg_real("input_scale");
  Tensor out = x;
  for (int64_t r0 = 0; r0 < x.numel(); r0 += row) {
    long double mx = -std::numeric_limits<long double>::infinity(), total = 0;
    for (int64_t j = 0; j < row; ++j) mx = std::fmax(mx, x.data[r0 + j]);
    for (int64_t j = 0; j < row; ++j) total += std::exp((x.data[r0 + j] - mx) * s);
    for (int64_t j = 0; j < row; ++j)
      out.data[r0 + j] =
          static_cast<double>(std::exp((x.data[r0 + j] - mx) * s) / total / kSoftmaxOutScale + kSoftmaxOutZeroPoint);
  }
  return with_meta(a, out);
}

// The real linear the codes stand for: the unrounded input code, the float
// weight and bias the int8 / int32 constants round (kwargs real_weight,
// real_bias), the output as its unrounded code.
Tensor linear_exact(const KernelArgs& a) {
  const Tensor& x = a.tensor(0);
  const Value* rw = a.kwarg("real_weight");
  const Value* rb = a.kwarg("real_bias");
  if (!rw || !std::holds_alternative<const Tensor*>(*rw))
    throw GraphError("%" + a.node.name + ": quantized_linear without its real_weight");
  const Tensor& w = *std::get<const Tensor*>(*rw);
  const Tensor* b = rb && std::holds_alternative<const Tensor*>(*rb) ? std::get<const Tensor*>(*rb) : nullptr;
  check_linear_shapes(x, w, b);
  const long double zi = -a.integer(3), zo = a.integer(4), si = *a.kwarg_real("input_scale"),
                    so = *a.kwarg_real("output_scale");
  const int64_t k = w.shape[1], n = w.shape[0], rows = x.numel() / std::max<int64_t>(k, 1);
  Tensor out(DType::i8, linear_shape(x, w));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < n; ++o) {
      long double acc = b ? b->data[o] : 0.0L;
      for (int64_t i = 0; i < k; ++i) acc += (x.data[r * k + i] - zi) * si * w.data[o * k + i];
      out.data[r * n + o] = static_cast<double>(acc / so + zo);
    }
  return with_meta(a, out);
}

void add_transpose(KernelSet& k) {
  // cortex_m.transpose (arm_transpose_s8): a permutation, exact in every set.
  const KernelSet ref = make_reference_kernels("ref", Numerics::exact);
  k.add(kTransposeOp, *ref.find("aten.permute.default"));
}

}  // namespace

KernelSet cmsis_nn_kernels(cmsis::Rounding rounding, DType linear_accumulation, cmsis::Overflow overflow,
                           cmsis::Isa isa, KernelFaults faults) {
  KernelSet k = make_reference_kernels("cmsis-nn", Numerics::emulated);
  add_transpose(k);
  k.add(kQuantizeOp, guarded(quantize_int8(isa, faults.quantize)));
  k.add(kDequantizeOp, guarded(dequantize_int8));
  k.add(kBmmOp, guarded(bmm_int8(rounding, overflow)));
  k.add(kMulOp, guarded(mul_int8(rounding, overflow)));
  k.add(kSoftmaxOp, guarded(softmax_int8(isa, faults.softmax_shift)));
  k.add(kQuantizedLinearOp, guarded(linear_int8(rounding, overflow)));
  add_linear_kernel(k, /*exact=*/false, linear_accumulation);
  return k;
}

KernelSet exact_cortex_m_kernels() {
  KernelSet k = make_reference_kernels("exact", Numerics::exact);
  add_transpose(k);
  k.add(kQuantizeOp, guarded(quantize_exact));
  k.add(kDequantizeOp, guarded(dequantize_exact));
  k.add(kBmmOp, guarded(bmm_exact));
  k.add(kMulOp, guarded(mul_exact));
  k.add(kSoftmaxOp, guarded(softmax_exact));
  k.add(kQuantizedLinearOp, guarded(linear_exact));
  add_linear_kernel(k, /*exact=*/true);
  return k;
}

}  // namespace sdpa::cortex_m
