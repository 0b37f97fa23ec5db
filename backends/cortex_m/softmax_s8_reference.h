#pragma once
/// An integer reference of arm_softmax_s8 for the stage check, written from
/// semantics/cortex-m-and-xnnpack.md §2.1 and §2.2 (gemmlowp's fixed-point exp
/// and 1/(1+x) as CMSIS-NN spells them) apart from the kernel model in cmsis/:
/// the two implementations hold each other to the bit.
#include <cstdint>
#include <vector>

namespace sdpa::cortex_m {

/// One row of int8 codes through arm_softmax_s8 (int8 output, zero point
/// -128) with its (mult, shift, diff_min). d·2^shift wraps in 32 bits (the
/// Helium lanes; where the scalar code overflows the kernel refuses the row);
/// a row whose final shift would reach 32 or more is all -128 (the Helium
/// lanes; the scalar code refuses it too).
std::vector<int64_t> softmax_s8_reference(const std::vector<int64_t>& row, int64_t mult, int64_t shift,
                                          int64_t diff_min);

}  // namespace sdpa::cortex_m
