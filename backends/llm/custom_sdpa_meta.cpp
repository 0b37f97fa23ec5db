// Models the asserts of custom_sdpa's Meta kernel (executorch main
// cff6f4dd32, extension/llm/custom_ops/custom_ops.py, _validate_params).
#include "backends/llm/custom_sdpa_meta.h"

#include <stdexcept>

namespace sdpa::llm {

void meta_check_mask(const ValueInfo& mask) {
  if (mask.shape.size() != 2)
    throw std::runtime_error("AssertionError in custom_sdpa meta (_validate_params): "
                             "attn_mask.dim() == 2 failed, got " + std::to_string(mask.shape.size()));
  if (mask.dtype != DType::f32 && mask.dtype != DType::f16)
    throw std::runtime_error(std::string("AssertionError in custom_sdpa meta (_validate_params): "
                                         "attn_mask dtype must be float32 or float16, got ") +
                             dtype_name(mask.dtype));
}

void meta_check_qkv(const Graph& g, ValueRef q, ValueRef k, ValueRef v, const ShapeEnv& env) {
  const DType t = g.info(q).dtype;
  if (t != DType::f32 && t != DType::bf16 && t != DType::f16)
    throw std::runtime_error(std::string("AssertionError in custom_sdpa meta (_validate_params): query dtype must "
                                         "be float32, bfloat16 or float16, got ") + dtype_name(t));
  const SymShape &ks = g.info(k).shape, &vs = g.info(v).shape;
  bool same = ks.size() == vs.size();
  for (size_t d = 0; same && d < ks.size(); ++d)
    same = ks[d] == vs[d] || env.on_hint(Fact{ks[d], Rel::eq, vs[d]}).value_or(false);
  if (!same)
    throw std::runtime_error("AssertionError in custom_sdpa meta (_validate_params): key.size() == value.size() "
                             "failed: " + shape_str(ks) + " and " + shape_str(vs));
}

}  // namespace sdpa::llm
