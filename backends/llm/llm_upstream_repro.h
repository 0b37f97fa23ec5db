#pragma once
/// The llm target's upstream code for a repro script: ExecuTorch's
/// ReplaceSDPAWithCustomSDPAPass on the exported call, then the rewritten
/// program with llama.custom_sdpa from ExecuTorch's custom ops.
#include "harness/check/target.h"

namespace sdpa::llm {

/// `options`: the target's, every key present.
UpstreamRepro llm_upstream_repro(const Options& options);

}  // namespace sdpa::llm
