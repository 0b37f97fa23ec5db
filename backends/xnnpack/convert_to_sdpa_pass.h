#pragma once
/// ConvertToSDPAPass (executorch backends/xnnpack/_passes/convert_to_sdpa.py,
/// semantics/cortex-m-and-xnnpack.md §3.2): each match of the partitioner's
/// SDPA pattern becomes one aten SDPA whose scale is the first mul.Scalar
/// literal, rounded to the MUL's dtype, squared; a mask of rank other than 2
/// raises and aborts the pass. Upstream runs it on each delegated subgraph
/// (the `per_delegate` placement); the design flow of semantics/passes.md §4
/// runs it on the whole traced graph.
#include <stdexcept>

#include "backends/xnnpack/sdpa_pattern.h"
#include "backends/xnnpack/xnnpack_partition.h"
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

/// Why a converted SDPA cannot be lowered where the pass runs inside a delegate.
inline constexpr const char* kNoSdpaVisitor =
    "no node visitor for aten.scaled_dot_product_attention.default (deleted in #11506)";

/// get_scale on one match. Main (PatternForms::scalar): the first
/// mul.Scalar's literal, or none when it is not a float. PR #20515 at
/// 257ef3a853 (scalar_and_lifted): the first MUL whose operand reads as a
/// float (a mul.Scalar's float literal, a mul.Tensor's one-element float
/// constant's item()), the others passed over (an int literal, a larger
/// constant, a literal mul.Tensor operand). The value is rounded to the
/// MUL's dtype and squared.
std::optional<double> recover_scale(const Graph& g, const SdpaPatternMatch& m, ScaleRecovery r,
                                    PatternForms forms = PatternForms::scalar);

class ConvertToSDPAPass : public Pass {
 public:
  /// On the whole graph (the design flow); `forms`: which pattern copies it matches.
  explicit ConvertToSDPAPass(ScaleRecovery r = ScaleRecovery::upstream, PatternForms forms = PatternForms::scalar)
      : recovery_(r), forms_(forms) {}
  /// On each delegate the partitioner leaves (`delegates` says which nodes
  /// it takes): a match is converted only when every node of it lies in one
  /// delegate, and a converted node then fails to serialize.
  ConvertToSDPAPass(ScaleRecovery r, Delegates delegates, PatternForms forms = PatternForms::scalar)
      : recovery_(r), forms_(forms), delegates_(std::move(delegates)) {}
  std::string name() const override { return "ConvertToSDPAPass"; }
  bool per_delegate() const { return static_cast<bool>(delegates_); }
  using Pass::run;
  /// Throws where upstream raises: PassUnsupported for a matched mask of
  /// rank != 2 and, per delegate, for a converted node (kNoSdpaVisitor);
  /// ConvertToSdpaError when no scale is found.
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override;

 private:
  ScaleRecovery recovery_;
  PatternForms forms_;
  Delegates delegates_;  ///< empty: the whole graph
};

}  // namespace sdpa::xnnpack
