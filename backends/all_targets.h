#pragma once
#include "harness/target.h"

namespace sdpa {

/// Registers every built-in target. A new target is a folder under
/// backends/ and one line in all_targets.cpp.
void register_all_targets(TargetRegistry& registry);

}  // namespace sdpa
