#pragma once
/// A campaign's progress as JSON, exactly: what a checkpoint holds so that
/// an interrupted campaign resumes (CampaignOptions::resume) with no lost or
/// doubled finding.
#include <nlohmann/json.hpp>

#include "harness/campaign/campaign.h"

namespace sdpa {

nlohmann::json target_run_to_json(const TargetRun& r);
/// Throws InputError "SOURCE: PATH.FIELD: ..." when the JSON is not a
/// TargetRun: a field missing or of another kind, a negative count, a
/// verdict count under a name that is not a verdict. `path` names the run
/// in its file ("done[0]").
TargetRun target_run_from_json(const nlohmann::json& j, const std::string& source, const std::string& path = "run");

}  // namespace sdpa
