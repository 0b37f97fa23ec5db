#pragma once
/// Toy target `toy-flash`: a direct _scaled_dot_product_flash_attention call
/// (causal aligned bottom-right) turned into aten SDPA (causal top-left).
/// It shows a bottom-right causal entry checked against oracles that honour
/// the alignment, and a guard that must keep causal calls with Lq != Lkv.
#include <memory>

#include "harness/check/target.h"

namespace sdpa::toy_flash {

std::unique_ptr<TargetFactory> make_factory();

}  // namespace sdpa::toy_flash
