#pragma once
/// The findings section of the HTML report: each written finding with what
/// explains it, its graphs before and after the passes, and its replay command.
#include <string>
#include <vector>

#include "harness/campaign/campaign.h"

namespace sdpa {

/// <section id="findings">: per target, one <article> per finding.
std::string html_findings_section(const std::vector<TargetRun>& runs);

}  // namespace sdpa
