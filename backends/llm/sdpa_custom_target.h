#pragma once
/// Target `llm` with entry=sdpa-custom: llama's SDPA module in a KV-cache
/// step (sdpa_custom_entry.h) swapped for SDPACustom by
/// replace_sdpa_with_custom_op (sdpa_custom_pass.h), on the same kernel sets
/// as the export pass's entry form.
#include <memory>

#include "harness/check/target.h"

namespace sdpa::llm {

/// `options` are the llm target's, resolved, with entry=sdpa-custom.
std::unique_ptr<Target> make_sdpa_custom_target(const Options& options);

/// The options that select the swap's self-test mutants.
std::vector<MutantSpec> sdpa_custom_mutants();

}  // namespace sdpa::llm
