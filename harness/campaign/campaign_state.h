#pragma once
/// A campaign's progress as JSON, exactly: what a checkpoint holds so that
/// an interrupted campaign resumes (CampaignOptions::resume) with no lost or
/// doubled finding.
#include <nlohmann/json.hpp>

#include "harness/campaign/campaign.h"

namespace sdpa {

nlohmann::json target_run_to_json(const TargetRun& r);
/// Throws InputError naming `source` when the JSON is not a TargetRun.
TargetRun target_run_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace sdpa
