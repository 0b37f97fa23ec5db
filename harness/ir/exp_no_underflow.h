#pragma once
/// std::exp in double for softmax weights: below -746, where e^x rounds to
/// 0 in double, 0 is returned without libm's underflow path (which sets
/// errno for each such weight and is slow). NaN reaches exp and stays NaN.
#include <cmath>

namespace sdpa {

inline double exp_no_underflow(double x) { return x < -746.0 ? 0.0 : std::exp(x); }

}  // namespace sdpa
