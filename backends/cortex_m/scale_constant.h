#pragma once
/// The attention scale a cortex-m graph computes with, for the checker's
/// constant comparison (Target::constants): the entry call's scale, or in a
/// decomposed graph the product of its scale MULs' factors, a quantized
/// MUL's int8 constant read as (code - zero point) · scale.
#include <vector>

#include "harness/check/target.h"

namespace sdpa::cortex_m {

std::vector<GraphConstant> scale_constants(const Graph& g);

}  // namespace sdpa::cortex_m
