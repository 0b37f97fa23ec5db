#pragma once
/// Toy target `toy-pattern`: a traced attention pattern (matmul -> mul by an
/// f32 scale literal -> softmax -> matmul) fused back into one SDPA whose
/// scale is recovered from the literal. It shows the refinement check on an
/// entry that is not an SDPA call, and a recovered constant named with its ulps.
#include <memory>

#include "harness/check/target.h"

namespace sdpa::toy_pattern {

std::unique_ptr<TargetFactory> make_factory();

}  // namespace sdpa::toy_pattern
