#pragma once
/// The differences from aten that custom_sdpa shows on runtime data, which
/// no guard can rule out, declared by both llm entry forms, and how a
/// non-finite row is traced to one of them.
#include <optional>
#include <string>
#include <vector>

#include "harness/check/target.h"

namespace sdpa::llm {

inline constexpr const char* kFullyMaskedNan = "custom-sdpa-fully-masked-nan";
inline constexpr const char* kCausalOverwrite = "custom-sdpa-causal-drops-non-finite";

std::vector<DeclaredDivergence> custom_sdpa_divergences();

/// The declared divergence that explains every row of `rows` (query rows of
/// [B, Hq, Lq]), or none. `causal`: custom_sdpa ran causal at `start_pos`
/// (row i keeps keys j <= start_pos + i).
std::optional<std::string> explain_custom_sdpa_nan(const Case& c, const CaseTensors& t, const Golden& g,
                                                   const std::vector<int64_t>& rows, bool causal,
                                                   int64_t start_pos);

}  // namespace sdpa::llm
