#pragma once
/// Target `llm`: ExecuTorch's LLM export rewrite of aten SDPA to
/// llama.custom_sdpa, under the `upstream` and `contract` guard policies.
#include <memory>

#include "harness/check/target.h"

namespace sdpa::llm {

std::unique_ptr<TargetFactory> make_factory();

}  // namespace sdpa::llm
