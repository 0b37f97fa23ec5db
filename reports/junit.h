#pragma once
/// JUnit XML for a campaign (schema: reports/junit.xsd), for CI test views:
/// a <testsuite> per target, a <testcase> per check (harness/check/verdict.h).
#include <string>
#include <vector>

#include "harness/campaign/campaign.h"
#include "reports/run_summary.h"

namespace sdpa {

/// A check's testcase fails when the target has a failure finding of that
/// check: the <failure> message is its verdict (several: each, most severe
/// first), the text every such finding's verdict block with its replay
/// command. missed-rewrite findings are warnings, in <system-out>. In an
/// identity run the checks that need the passes are <skipped>.
std::string junit_xml(const RunSettings& s, const std::vector<TargetRun>& runs);

/// Writes junit_xml to `path` atomically; returns the path.
std::string write_junit(const std::string& path, const RunSettings& s, const std::vector<TargetRun>& runs);

}  // namespace sdpa
