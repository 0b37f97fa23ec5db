#include "cli/wiring.h"

#include "backends/all_targets.h"
#include "generators/case_gen.h"
#include "generators/gen_policy.h"
#include "oracles/dual_oracle.h"

namespace sdpa::cli {

Wiring make_wiring() {
  Wiring w;
  register_all_targets(w.registry);
  w.reference = make_dual_oracle();
  w.generators = [](const std::string& policy) -> CaseGeneratorFactory {
    if (policy != "default" && policy != "large") return nullptr;
    GenPolicy p = policy == "large" ? GenPolicy::large() : GenPolicy::defaults();
    return [p](const CaseSpace& space) { return gen_case(p, space); };
  };
  return w;
}

}  // namespace sdpa::cli
