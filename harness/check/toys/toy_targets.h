#pragma once
#include "harness/check/target.h"

namespace sdpa {

/// Registers the toy targets of the check tests. Generated from the folder
/// list in harness/check/toys/CMakeLists.txt, exactly as the built-in
/// targets are from backends/CMakeLists.txt.
void register_toy_targets(TargetRegistry& registry);

}  // namespace sdpa
