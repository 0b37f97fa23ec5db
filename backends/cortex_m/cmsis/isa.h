#pragma once
/// Which code path the Cortex-M build takes: the scalar C code (cores
/// without MVE: Cortex-M4, M7, M33) or Helium, the M-profile vector extension
/// of the Cortex-M55 (__ARM_FEATURE_MVE; ExecuTorch's default target).
namespace sdpa::cortex_m::cmsis {

enum class Isa { scalar, helium };

}  // namespace sdpa::cortex_m::cmsis
