#pragma once
// Calls the xnnpack tests share: small, with scales that are not f32 values.
#include "harness/case/case.h"

namespace sdpa::xnnpack::testing {

/// [1, 2, 3, E] x [1, 2, 4, E], an additive f32 mask [3, 4], scale none (1/sqrt(E)).
inline Case masked_call(int64_t E = 64, DType t = DType::f32) {
  Case c;
  c.dtype = t;
  c.batch = {SymExpr(1)};
  c.q_heads = c.kv_heads = 2;
  c.q_len = 3;
  c.kv_len = 4;
  c.head_dim = c.value_dim = E;
  MaskSpec m;
  m.dtype = t;
  m.shape = {SymExpr(3), SymExpr(4)};
  m.pattern = MaskPattern::random;
  m.param = 0.7;
  c.mask = m;
  c.data.seed = 11;
  return c;
}

inline Case with_variant(Case c, const std::string& v) {
  c.variant = v;
  return c;
}

}  // namespace sdpa::xnnpack::testing
