#pragma once
/// Test helpers: what a CMSIS model refused, and the float references the
/// int8 kernels are compared with (NUMERICS.md "Int8 pipelines").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "backends/cortex_m/cmsis/cmsis_error.h"

namespace sdpa::cortex_m::cmsis::testing {

/// The fault `f` throws as `Error`; a test failure (and an empty fault) when
/// it returns or throws anything else.
template <class Error = CmsisUndefined>
CmsisFault refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), describe(e.fault()));
    return e.fault();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw something else: " << e.what();
    return {};
  }
  ADD_FAILURE() << "was not refused";
  return {};
}

/// clamp(round_half_even(v), lo, hi): the fake-quantized reference value.
inline int round_clamp(long double v, int lo = -128, int hi = 127) {
  return static_cast<int>(std::clamp(std::nearbyint(v), static_cast<long double>(lo), static_cast<long double>(hi)));
}

}  // namespace sdpa::cortex_m::cmsis::testing
