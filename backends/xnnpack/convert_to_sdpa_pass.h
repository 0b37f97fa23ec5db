#pragma once
/// ConvertToSDPAPass (executorch backends/xnnpack/_passes/convert_to_sdpa.py,
/// semantics/cortex-m-and-xnnpack.md §3.2): each match of the partitioner's
/// SDPA pattern becomes one aten SDPA whose scale is the first mul.Scalar
/// literal, rounded to the MUL's dtype, squared; a mask of rank other than 2
/// raises and aborts the pass.
#include <stdexcept>

#include "backends/xnnpack/sdpa_pattern.h"
#include "harness/check/target.h"

namespace sdpa::xnnpack {

/// How the scale comes back from the literals.
enum class ScaleRecovery {
  upstream,        ///< get_scale: first literal, rounded to the MUL's dtype, squared (the sign is lost)
  one_ulp_up,      ///< upstream's, one ulp of the graph dtype too large (a self-test mutant)
};

/// What ConvertToSDPAPass raises where upstream raises: the message is upstream's.
class ConvertToSdpaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The upstream message for a matched mask of rank `rank`.
std::string mask_rank_message(int64_t rank);

/// get_scale on one match: the recovered scale, or none when the first
/// mul.Scalar's literal is not a float.
std::optional<double> recover_scale(const Graph& g, const SdpaPatternMatch& m, ScaleRecovery r);

class ConvertToSDPAPass : public Pass {
 public:
  explicit ConvertToSDPAPass(ScaleRecovery r = ScaleRecovery::upstream) : recovery_(r) {}
  std::string name() const override { return "ConvertToSDPAPass"; }
  using Pass::run;
  /// Throws where upstream raises: PassUnsupported for a matched mask of
  /// rank != 2, ConvertToSdpaError when no scale is found.
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override;

 private:
  ScaleRecovery recovery_;
};

}  // namespace sdpa::xnnpack
