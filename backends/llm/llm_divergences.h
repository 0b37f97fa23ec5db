#pragma once
/// The differences from aten that custom_sdpa shows on runtime data, which
/// no guard can rule out, declared by both llm entry forms, and how a
/// non-finite row is traced to one of them.
#include <optional>
#include <string>
#include <vector>

#include "backends/llm/executorch_revision.h"
#include "harness/check/target.h"

namespace sdpa::llm {

inline constexpr const char* kFullyMaskedNan = "custom-sdpa-fully-masked-nan";
inline constexpr const char* kCausalOverwrite = "custom-sdpa-causal-drops-non-finite";
inline constexpr const char* kCarriedRowSum = "custom-sdpa-carried-row-sum";
inline constexpr const char* kMaskedBlockNan = "custom-sdpa-masked-block-nan";

/// The divergences of custom_sdpa in the ExecuTorch tree `rev`.
std::vector<DeclaredDivergence> custom_sdpa_divergences(const EtRevision& rev = {});

/// How an entry form calls custom_sdpa on a case's tensors.
struct CustomSdpaCall {
  bool causal = false;    // row i keeps keys j <= start_pos + i
  bool masked = false;    // the case's mask is passed (additive; a bool one as 0 / -inf)
  int64_t start_pos = 0;
  int64_t threads = 1;    // the threadpool's threads (option "threads")
  /// A tree before f3e8972de6 (EtRevision::nan_for_masked_block): a row
  /// whose first kv block holds no key it keeps gets a NaN sum.
  bool nan_for_masked_block = false;
  /// The kernel set computes in f32 (the scale and each score rounded to
  /// f32, as custom_sdpa's float accumulation does), else exactly (the
  /// exact kernels of the soundness run).
  bool f32 = false;
};

/// The declared divergence that explains every row of `rows` (query rows of
/// [B, Hq, Lq]), or none. Worked out from §1.5 and §1.11 and the case's
/// values, never from the kernel model's output.
std::optional<std::string> explain_custom_sdpa_nan(const Case& c, const CaseTensors& t, const Golden& g,
                                                   const std::vector<int64_t>& rows, const CustomSdpaCall& call);

}  // namespace sdpa::llm
