#pragma once
/// The plot sections of the HTML report, one function each: verdicts per
/// target, error-ratio histograms, guard decisions per case class, coverage.
#include <string>
#include <vector>

#include "harness/campaign/campaign.h"
#include "reports/campaign_stats.h"

namespace sdpa {

/// <section id="verdicts">: a bar chart of verdict counts per target.
std::string verdict_section(const std::vector<TargetRun>& runs, const CampaignStats& stats);
/// <section id="error-ratios">: a histogram per target, dtype and kernel set.
std::string ratio_section(const std::vector<TargetRun>& runs, const CampaignStats& stats);
/// <section id="error-lsb">: the end-to-end error in output LSB, a
/// histogram per target and kernel set with an int8 output.
std::string lsb_section(const std::vector<TargetRun>& runs, const CampaignStats& stats);
/// <section id="guard-decisions">: per target, case class x deciding rule.
std::string guard_section(const std::vector<TargetRun>& runs, const CampaignStats& stats);
/// <section id="variants">: per target with entry variants, each variant's
/// cases, verdicts and the target's counters.
std::string variant_section(const std::vector<TargetRun>& runs);
/// <section id="coverage">: Lq against Lkv, head layouts, mask kinds, dtypes.
std::string coverage_section(const std::vector<TargetRun>& runs, const CampaignStats& stats);

}  // namespace sdpa
