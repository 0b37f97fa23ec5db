#pragma once
/// Models of ExecuTorch's cortex_m.quantize_per_tensor and
/// cortex_m.dequantize_per_tensor for int8 (backends/cortex_m/ops/
/// op_{quantize,dequantize}_per_tensor.cpp, scalar path),
/// semantics/cortex-m-and-xnnpack.md §1.7.
#include <cstdint>
#include <vector>

#include "backends/cortex_m/cmsis/isa.h"

namespace sdpa::cortex_m::cmsis {

/// q = clamp(zp + (int32) nearbyint(inv_scale·x)) with inv_scale = 1.0f /
/// float(scale): float32 math, a multiply by the float reciprocal (not a
/// division), round half to even; clamped by max(q, quant_min) then
/// min(q, quant_max). CmsisCheckFailed (kernel "quantize_per_tensor") when
/// quant_min < -128 or quant_max > 127 (ET_CHECK_MSG); CmsisUndefined when
/// nearbyint(inv_scale·x) is NaN or outside int32 (operand "input[i]": the
/// float-to-int conversion is undefined) or zp + it overflows ("zero_point"),
/// and for quant_max < -128 (the int8 store would wrap).
/// Helium (op_quantize_per_tensor.cpp @5e547f52): each whole block of 16
/// elements goes through one fused multiply-add x·inv_scale + 1.5·2^23
/// (rounded once, half to even), the zero point added in int32 to the
/// float's bits less 0x4B400000, the low 16 bits kept (no saturation), then
/// clamped in int16; the last numel % 16 elements take the scalar path. A
/// non-finite x gives the zero point; past |x·inv_scale| = 2^22 the result is
/// what those bits make, as on the device. A subnormal x or inv_scale is
/// taken as 0 (MVE's flush-to-zero; it matters for |scale| below 2.4e-38 or
/// above 8.5e37).
/// How the scalar path rounds inv_scale·x: nearbyint (upstream), or toward
/// zero, a cast in its place (the self-test mutant quantize-truncates).
enum class QuantizeRounding { to_nearest_even, toward_zero };

std::vector<int8_t> quantize_per_tensor(const std::vector<float>& x, double scale, int32_t zero_point,
                                        int32_t quant_min = -128, int32_t quant_max = 127, Isa isa = Isa::scalar,
                                        QuantizeRounding rounding = QuantizeRounding::to_nearest_even);

/// x = float(q - zp)·float(scale) in float32. CmsisUndefined (kernel
/// "dequantize_per_tensor", operand "zero_point") when q - zp overflows int32.
std::vector<float> dequantize_per_tensor(const std::vector<int8_t>& q, double scale, int32_t zero_point);

}  // namespace sdpa::cortex_m::cmsis
