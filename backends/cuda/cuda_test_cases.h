#pragma once
/// The call the cuda tests start from: an f16 [1, 4, 3, 8] MHA call every
/// fused variant takes, which each test then changes.
#include "harness/case/case.h"

namespace sdpa::cuda::testing {

inline Case base_call() {
  Case c;
  c.dtype = DType::f16;
  c.batch = {SymExpr(1)};
  c.q_heads = 4;
  c.kv_heads = 4;
  c.q_len = 3;
  c.kv_len = 3;
  c.head_dim = 8;
  c.value_dim = 8;
  c.data.seed = 7;
  return c;
}

}  // namespace sdpa::cuda::testing
