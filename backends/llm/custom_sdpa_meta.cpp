// Models the asserts of custom_sdpa's Meta kernel (executorch main
// cff6f4dd32, extension/llm/custom_ops/custom_ops.py, _validate_params).
#include "backends/llm/custom_sdpa_meta.h"

#include <stdexcept>

namespace sdpa::llm {
namespace {

const char* const kAssert = "AssertionError in custom_sdpa meta (_validate_params): ";

// How Python prints a torch dtype in the assert messages' f-strings.
std::string torch_dtype(DType t) {
  switch (t) {
    case DType::f64: return "torch.float64";
    case DType::f32: return "torch.float32";
    case DType::f16: return "torch.float16";
    case DType::bf16: return "torch.bfloat16";
    case DType::i8: return "torch.int8";
    case DType::i32: return "torch.int32";
    case DType::i64: return "torch.int64";
    case DType::b8: return "torch.bool";
  }
  return "?";
}

}  // namespace

void meta_check_mask(const ValueInfo& mask) {
  if (mask.shape.size() != 2)
    throw std::runtime_error(std::string(kAssert) + "Expected attn_mask to be 2 dimensional but got " +
                             std::to_string(mask.shape.size()) + " dimensions.");
  if (mask.dtype != DType::f32 && mask.dtype != DType::f16)
    throw std::runtime_error(std::string(kAssert) + "Expected attn_mask to be float but got " +
                             torch_dtype(mask.dtype));
}

// custom_sdpa's Meta passes key and value as both key/value and the caches:
// the cache asserts are the ones that speak of sizes. q, k and v share one
// dtype in every graph here, so the key and value dtype asserts never fire.
// Before 411a01e1b9 (EtRevision::float_only) the query assert took float32 only.
void meta_check_qkv(const Graph& g, ValueRef q, ValueRef k, ValueRef v, const ShapeEnv& env, const EtRevision& rev) {
  const DType t = g.info(q).dtype;
  if (rev.float_only && t != DType::f32)
    throw std::runtime_error(std::string(kAssert) + "Expected query to be float32 but got " + torch_dtype(t));
  if (t != DType::f32 && t != DType::bf16 && t != DType::f16)
    throw std::runtime_error(std::string(kAssert) + "Expected query to be float32, bfloat16, or float16 but got " +
                             torch_dtype(t));
  const SymShape &ks = g.info(k).shape, &vs = g.info(v).shape;
  bool same = ks.size() == vs.size();
  for (size_t d = 0; same && d < ks.size(); ++d)
    same = ks[d] == vs[d] || env.on_hint(Fact{ks[d], Rel::eq, vs[d]}).value_or(false);
  if (!same)
    throw std::runtime_error(std::string(kAssert) + "Key cache and value cache must have same size but got " +
                             "torch.Size(" + shape_str(ks) + ") and torch.Size(" + shape_str(vs) + ")");
}

}  // namespace sdpa::llm
