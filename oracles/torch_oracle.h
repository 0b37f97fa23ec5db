#pragma once
/// The LibTorch oracle: what the original aten SDPA call means, composed
/// from float64 ATen ops the way PyTorch's math path composes it
/// (NUMERICS.md, "Oracles"). ATen stays inside torch_oracle.cpp.
#include "harness/check/reference.h"

namespace sdpa {

/// The golden output [batch..., Hq, Lq, Ev] (f64) and the fully masked
/// rows of the call `c` at runtime size `at`, from its tensors `t` (entry
/// layout). Throws std::invalid_argument when the tensors do not match the
/// case's shapes at `at` or the heads do not form a call aten accepts.
Golden torch_golden(const Case& c, const CaseTensors& t, const Assignment& at);

}  // namespace sdpa
