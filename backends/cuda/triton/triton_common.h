#pragma once
/// What ExecuTorch's two Triton SDPA ops share (backends/cuda/triton/kernels/
/// sdpa.py, semantics/llm-and-cuda.md §4.3, §4.4): the argument list, the
/// input checks with their RuntimeError texts, the scale default, and the
/// scalar arithmetic of a Triton program (f32 registers, bf16 operands).
#include <cmath>
#include <string>

#include "harness/ir/kernel_set.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::cuda_triton {

/// A RuntimeError raised by the Python wrapper before any launch: a checked,
/// recoverable refusal carrying the upstream text.
[[noreturn]] void runtime_error(const std::string& text);

/// The call `op(query, key, value, attn_mask=None, dropout_p=0.0,
/// is_causal=False, scale=0.0, enable_gqa=False[, phi=5.0])`, positional
/// or by keyword.
struct TritonCall {
  const Tensor *q, *k, *v, *mask;
  double dropout_p = 0.0;
  bool is_causal = false;
  double scale = 0.0;
  bool enable_gqa = false;
  double phi = 5.0;
};
TritonCall read_triton_call(const KernelArgs& a);

/// torch.Size's repr: "torch.Size([1, 1, 2, 3])".
std::string torch_size(const Shape& s);

/// _validate_sdpa_inputs: (CUDA tensors: not modeled), bf16, 4-D, dropout 0.
void validate_sdpa_inputs(const TritonCall& c);

/// _prepare_mask_params: bool, head dim 1, exactly [B, 1, L_q, L_kv].
void prepare_mask_params(const Tensor* mask, int64_t B, int64_t Lq, int64_t Lkv);

/// A mask the checks pass but the model does not compute with (rank > 4):
/// `unsupported`. Called after the program compiles, as upstream would
/// read it only when the program runs.
void refuse_unmodeled_mask(const Tensor* mask);

/// `sm_scale = 1.0 / math.sqrt(D) if scale == 0.0 else scale`: 0.0 means default.
double sm_scale(double scale, int64_t D);

bool is_power_of_2(int64_t n);

/// The first launch compiles a program, and Triton's `tl.dot` asserts its
/// operand sizes then (triton/language/semantic.py `dot` against the NVIDIA
/// backend's `min_dot_size`, third_party/nvidia/backend/compiler.py: K >= 16
/// for 16-bit operands, M and N >= 1): a contraction K below 16 is a
/// CompilationError, recoverable, raised after the wrapper's checks. The
/// text holds Triton's AssertionError as its CompilationError repeats it;
/// `dot` (the tl.dot call and its program, where Triton prints the line of
/// source) and K are sdpacheck's.
void check_dot_k(int64_t K, const std::string& dot);

/// Scalar arithmetic of one numerics: the kernel's f32 registers, or long
/// double without rounding (the exact twin).
struct TritonArith {
  bool exact = false;
  long double f32(long double x) const { return exact ? x : static_cast<float>(x); }
  long double bf16(long double x) const {
    return exact ? x : round_to(DType::bf16, static_cast<double>(x));
  }
  /// tl.exp lowers to ex2.approx.ftz.f32: a result below FLT_MIN flushes to 0.
  long double exp(long double x) const;
  long double exp2(long double x) const;
};

/// A [B, H, L, D] tensor read at (b, h, l, e).
inline double at4(const Tensor& t, int64_t b, int64_t h, int64_t l, int64_t e) {
  return t.data[((b * t.shape[1] + h) * t.shape[2] + l) * t.shape[3] + e];
}

/// tl.dot of bf16 q row i (head h) with bf16 k row j (head hk): exact
/// products summed in f32 (long double when exact).
long double dot_qk(const TritonArith& ar, const Tensor& q, const Tensor& k, int64_t b, int64_t h,
                   int64_t i, int64_t hk, int64_t j);

}  // namespace sdpa::cuda_triton
