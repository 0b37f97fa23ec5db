#pragma once
/// The structural properties of a graph after ReplaceFusedSdpaWithSdpaPass.
#include <string>
#include <vector>

#include "backends/cuda/replace_fused_sdpa_pass.h"

namespace sdpa::cuda {

/// Each violation in words: enable_gqa set exactly when the head counts are
/// not statically equal; a scale only where the fused call had one; no fused
/// node left that `pass`'s guard accepted; a reader of logsumexp still reads
/// a fused node's logsumexp.
std::vector<std::string> fused_rewrite_invariants(const ReplaceFusedSdpaWithSdpaPass& pass, const ShapeEnv& env,
                                                  const Graph& before, const Graph& after);

}  // namespace sdpa::cuda
