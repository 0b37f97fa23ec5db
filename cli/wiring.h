#pragma once
/// What the command-line tool wires together: targets, the reference
/// model and the case generators. The commands see only this.
#include <memory>

#include "harness/campaign/campaign.h"
#include "harness/check/reference.h"
#include "harness/check/target.h"

namespace sdpa::cli {

struct Wiring {
  TargetRegistry registry;
  std::unique_ptr<ReferenceModel> reference;
  /// policy name ("default", "large") -> generator factory; empty when unknown.
  std::function<CaseGeneratorFactory(const std::string& policy)> generators;
};

Wiring make_wiring();

}  // namespace sdpa::cli
