#pragma once
/// The Eigen oracle: what the original aten SDPA call means, computed in
/// double with compensated sums (more accurate than the long double
/// NUMERICS.md names; README, Numerics) and naive, max-subtracted softmax.
#include "harness/check/reference.h"

namespace sdpa {

/// The golden output [batch..., Hq, Lq, Ev] (f64) and the fully masked
/// rows of the call `c` at runtime size `at`, from its tensors `t` (entry
/// layout). Throws std::invalid_argument when the tensors do not match the
/// case's sizes at `at` or do not form a call aten accepts.
Golden eigen_golden(const Case& c, const CaseTensors& t, const Assignment& at);

}  // namespace sdpa
