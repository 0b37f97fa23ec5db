#pragma once
/// Shared helpers of the oracle tests: hand-made and varied cases, the
/// reference kernel as a naive low-precision computation of the same call.
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>

#include "harness/ir/kernels/reference_kernels.h"
#include "harness/check/reference.h"
#include "oracles/dual_oracle.h"

namespace sdpa::test {

/// One f64 bhsd call without batch dims, default scale, seed 7.
Case make_case(int64_t Hq, int64_t Hkv, int64_t Lq, int64_t Lkv, int64_t E, int64_t Ev);

/// A bool or additive mask of the given concrete shape and values.
MaskSpec mask_spec(DType dtype, std::vector<int64_t> shape,
                   MaskPattern pattern = MaskPattern::keep_all, double param = 0.0,
                   MaskFill fill = MaskFill::neg_inf);

/// Element `index` of a [..., Ev] golden output.
double out_at(const Golden& g, const std::vector<int64_t>& index);

struct VariedOptions {
  bool bshd = true;     // allow the bshd layout
  bool symbols = true;  // allow a symbolic Lkv with several runtime sizes
};

/// The i-th of a family of valid cases varying every field: dtype, layout,
/// batch dims, plain/GQA/broadcast heads, sizes, causal or a mask (dtype,
/// rank, pattern, fill), dropout, scale (none, 0, negative, large),
/// distribution, magnitude (up to overflow in f16) and seed.
Case varied_case(uint64_t i, const VariedOptions& options = {});

/// aten SDPA run by the harness's reference kernel in `numerics` (emulated:
/// rounded to the case dtype step by step). Needs the bhsd layout.
Tensor reference_sdpa(const Case& c, const CaseTensors& t, Numerics numerics);

struct NamedOracle {
  std::string name;
  OracleFn golden;
};
inline std::ostream& operator<<(std::ostream& o, const NamedOracle& n) { return o << n.name; }

/// The semantics suite of one oracle (oracle_semantics_test.cpp),
/// instantiated once per oracle.
class OracleSemantics : public ::testing::TestWithParam<NamedOracle> {
 protected:
  Golden run(const Case& c, const CaseTensors& t) const { return GetParam().golden(c, t, {}); }
};

}  // namespace sdpa::test
