#pragma once
/// The mha entry form (mha_entry.h) as the harness's composite
/// (harness/check/composite.h): the oracles judge the inner SDPA on q, k, v
/// after the exact in-projection; the module's golden is the exact
/// out-projection of the oracles' output; the bound carries the SDPA bound
/// through the out-projection and adds what the projections round.
#include "backends/cortex_m/mha_entry.h"
#include "harness/check/composite.h"

namespace sdpa::cortex_m {

/// `c` must be one mha_refuses accepts.
Composite mha_composite(const Case& c);

}  // namespace sdpa::cortex_m
