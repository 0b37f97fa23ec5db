#include "backends/cuda/triton/triton_common.h"

#include <cfloat>
#include <limits>
#include <sstream>

namespace sdpa::cuda_triton {
namespace {

// The value bound to parameter `name` at position `i`: positional, else the
// keyword, else none (the Python default applies).
const Value* bound(const KernelArgs& a, size_t i, const std::string& name) {
  if (i < a.args.size()) return &a.args[i];
  return a.kwarg(name);
}

double real(const KernelArgs& a, size_t i, const std::string& name, double fallback) {
  const Value* v = bound(a, i, name);
  if (!v || std::holds_alternative<None>(*v)) return fallback;
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* n = std::get_if<int64_t>(v)) return static_cast<double>(*n);
  throw GraphError("%" + a.node.name + ": " + name + " is not a number");
}

bool flag(const KernelArgs& a, size_t i, const std::string& name, bool fallback) {
  const Value* v = bound(a, i, name);
  if (!v || std::holds_alternative<None>(*v)) return fallback;
  if (const auto* b = std::get_if<bool>(v)) return *b;
  throw GraphError("%" + a.node.name + ": " + name + " is not a boolean");
}

const Tensor* optional_tensor(const KernelArgs& a, size_t i, const std::string& name) {
  const Value* v = bound(a, i, name);
  if (!v || std::holds_alternative<None>(*v)) return nullptr;
  if (const auto* t = std::get_if<const Tensor*>(v)) return *t;
  throw GraphError("%" + a.node.name + ": " + name + " is not a tensor");
}

std::string dims(const Tensor& t) { return std::to_string(t.dim()); }

}  // namespace

void runtime_error(const std::string& text) {
  throw KernelError(KernelError::Kind::recoverable, text);
}

TritonCall read_triton_call(const KernelArgs& a) {
  TritonCall c{&a.tensor(0), &a.tensor(1), &a.tensor(2), optional_tensor(a, 3, "attn_mask")};
  c.dropout_p = real(a, 4, "dropout_p", 0.0);
  c.is_causal = flag(a, 5, "is_causal", false);
  c.scale = real(a, 6, "scale", 0.0);
  c.enable_gqa = flag(a, 7, "enable_gqa", false);
  c.phi = real(a, 8, "phi", 5.0);
  // kv_len (a device int bounding the KV loop): the replacement pass never supplies it.
  if (a.args.size() > 9 || a.kwarg("kv_len"))
    throw KernelError(KernelError::Kind::unsupported, "triton sdpa with kv_len is not modeled");
  return c;
}

std::string torch_size(const Shape& s) {
  std::ostringstream o;
  o << "torch.Size([";
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << "])";
  return o.str();
}

// sdpa.py _validate_sdpa_inputs; "Q, K, V must be CUDA tensors." is not modeled.
void validate_sdpa_inputs(const TritonCall& c) {
  if (c.q->dtype != DType::bf16 || c.k->dtype != DType::bf16 || c.v->dtype != DType::bf16)
    runtime_error("Expected bfloat16 inputs");
  if (c.q->dim() != 4 || c.k->dim() != 4 || c.v->dim() != 4)
    runtime_error("Expected 4D tensors shaped [B, H, L, D]; got query.dim()=" + dims(*c.q) +
                  ", key.dim()=" + dims(*c.k) + ", value.dim()=" + dims(*c.v) + ".");
  if (c.dropout_p != 0.0) runtime_error("dropout_p must be 0.0 (not supported in this implementation).");
}

// sdpa.py _prepare_mask_params; "attn_mask must be a CUDA tensor" is not modeled.
void prepare_mask_params(const Tensor* mask, int64_t B, int64_t Lq, int64_t Lkv) {
  if (!mask) return;
  if (mask->dtype != DType::b8) runtime_error("attn_mask must have dtype torch.bool");
  // attn_mask.shape[i] past the mask's rank raises IndexError, in the order Python reads them.
  auto size = [&](int64_t i) {
    if (i >= mask->dim())
      throw KernelError(KernelError::Kind::recoverable, "IndexError: tuple index out of range");
    return mask->size(i);
  };
  if (size(1) != 1)
    runtime_error("attn_mask head dimension must be 1 (broadcast over heads); per-head masks are not "
                  "supported. Got attn_mask.shape=" + torch_size(mask->shape));
  if (size(0) != B || size(2) != Lq || size(3) != Lkv)
    runtime_error("attn_mask shape mismatch: expected [B=" + std::to_string(B) + ", 1, L_q=" +
                  std::to_string(Lq) + ", L_kv=" + std::to_string(Lkv) + "], got " + torch_size(mask->shape));
}

void refuse_unmodeled_mask(const Tensor* mask) {
  // A mask of rank > 4 passes the wrapper's checks; the program then reads
  // it with strides 0, 2 and 3 only.
  if (mask && mask->dim() > 4)
    throw KernelError(KernelError::Kind::unsupported, "attn_mask of rank > 4 is read by strides: not modeled");
  // A tree that leaves dim 1 unchecked reads head 0's rows, which a size-0 dim lacks.
  if (mask && mask->dim() == 4 && mask->size(1) == 0 && mask->size(0) * mask->size(2) * mask->size(3) > 0)
    throw KernelError(KernelError::Kind::unsupported, "attn_mask with a size-0 head dim: not modeled");
}

double sm_scale(double scale, int64_t D) {
  if (scale == 0.0 && D == 0)
    throw KernelError(KernelError::Kind::recoverable, "ZeroDivisionError: float division by zero");
  return scale == 0.0 ? 1.0 / std::sqrt(static_cast<double>(D)) : scale;
}

bool is_power_of_2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

void check_dot_k(int64_t K, const std::string& dot) {
  constexpr int64_t kMinDotK = 16;  // min_dot_size's k for bf16 operands
  if (K < kMinDotK)
    runtime_error("CompilationError at " + dot + ": AssertionError('Input shapes should have M >= 1, N >= 1 and "
                  "K >= 16') [K = " + std::to_string(K) + "]");
}

long double TritonArith::exp(long double x) const {
  if (exact) return std::exp(x);
  float y = std::exp(static_cast<float>(x));
  return y < FLT_MIN ? 0.0f : y;
}

long double TritonArith::exp2(long double x) const {
  if (exact) return std::exp2(x);
  float y = std::exp2(static_cast<float>(x));
  return y < FLT_MIN ? 0.0f : y;
}

long double dot_qk(const TritonArith& ar, const Tensor& q, const Tensor& k, int64_t b, int64_t h,
                   int64_t i, int64_t hk, int64_t j) {
  long double acc = 0;
  for (int64_t e = 0; e < q.shape[3]; ++e)
    acc = ar.f32(acc + static_cast<long double>(at4(q, b, h, i, e)) * at4(k, b, hk, j, e));
  return acc;
}

}  // namespace sdpa::cuda_triton
