#pragma once
/// index.html for a campaign: one self-contained page (inline CSS and SVG,
/// no network) with verdicts, error ratios, guard decisions per case class,
/// coverage of the case space, and the findings.
#include <string>
#include <vector>

#include "harness/campaign/campaign.h"
#include "reports/campaign_stats.h"
#include "reports/run_summary.h"

namespace sdpa {

/// The page. Its last script sets document.body.dataset.renderStatus to
/// "ok" when every section is present (a window.onerror handler sets
/// "script-error: MESSAGE" first), for headless checks of the dumped DOM.
std::string html_report(const RunSettings& s, const std::vector<TargetRun>& runs, const CampaignStats& stats);

/// Writes dir/index.html atomically; returns its path.
std::string write_html_report(const std::string& dir, const RunSettings& s, const std::vector<TargetRun>& runs,
                              const CampaignStats& stats);

}  // namespace sdpa
