#include "backends/all_targets.h"

#include "backends/aten/aten_target.h"
#include "backends/llm/llm_target.h"

namespace sdpa {

void register_all_targets(TargetRegistry& registry) {
  registry.add(aten::make_factory());
  registry.add(llm::make_factory());
}

}  // namespace sdpa
