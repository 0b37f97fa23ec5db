#pragma once
/// Test support: every built-in target registered, the dual oracle, and the
/// default case generators, as a target's tests run campaigns with them.
#include <memory>

#include "backends/all_targets.h"
#include "generators/case_gen.h"
#include "harness/campaign/campaign.h"
#include "oracles/dual_oracle.h"

namespace sdpa {

struct TargetFixture {
  TargetRegistry registry;
  std::unique_ptr<ReferenceModel> reference = make_dual_oracle();
  CaseGeneratorFactory generators = [](const CaseSpace& s) { return gen_case(GenPolicy::defaults(), s); };
  TargetFixture() { register_all_targets(registry); }
};

}  // namespace sdpa
