#pragma once
/// toy_int8: a float SDPA whose pass quantizes it to int8 (per-tensor q, k,
/// v with scales from the call's own data) and whose kernel set computes in
/// int8 with requantization. It shows the accuracy check on a quantized
/// numerics declaration, which no real target has yet.
#include <memory>

#include "harness/check/target.h"

namespace sdpa::toy_int8 {

std::unique_ptr<TargetFactory> make_factory();

}  // namespace sdpa::toy_int8
