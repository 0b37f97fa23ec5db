#include "backends/all_targets.h"

#include "backends/aten/aten_target.h"

namespace sdpa {

void register_all_targets(TargetRegistry& registry) {
  registry.add(aten::make_factory());
}

}  // namespace sdpa
