#pragma once
/// Meaning checks on a Case: only calls aten accepts, sizes in range, and
/// size limits enforced before any tensor is allocated.
#include <cstdint>

#include "harness/case/case.h"

namespace sdpa {

struct SizeLimits {
  int64_t max_tensor_elements = int64_t{1} << 22;  // any one of q, k, v, mask, scores
  int64_t max_dim = 1 << 16;                         // any single size
  int64_t max_batch_rank = 4;
  int64_t max_runs = 16;                             // entries of `runtime`
};

/// Throws InputError naming the field ("case.kv_heads: ...") on the first
/// violation. `path` prefixes every field name.
void validate_case(const Case& c, const SizeLimits& limits = {}, const std::string& path = "case");

}  // namespace sdpa
