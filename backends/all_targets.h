#pragma once
#include "harness/check/target.h"

namespace sdpa {

/// Registers every built-in target. Generated from the folder list in
/// backends/CMakeLists.txt: a new target is a folder under backends/ with its
/// own CMakeLists.txt (sdpa_add_target) and one line in that list.
void register_all_targets(TargetRegistry& registry);

}  // namespace sdpa
