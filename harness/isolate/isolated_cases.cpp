#include "harness/isolate/isolated_cases.h"

#include "harness/case/case_json.h"
#include "harness/isolate/result_codec.h"

namespace sdpa {
namespace {

Worker::Handler case_handler(IsolatedCases::TargetLookup target_for, const ReferenceModel& reference) {
  return [target_for = std::move(target_for), &reference](const nlohmann::json& request) {
    const Target& target =
        target_for(request.at("target").get<std::string>(), request.at("options").get<Options>());
    Case c = case_from_json(request.at("case"));
    return result_to_json(run_case(target, reference, c, check_options_from_json(request.at("check"))));
  };
}

}  // namespace

IsolatedCases::IsolatedCases(TargetLookup target_for, const ReferenceModel& reference, WorkerLimits limits)
    : worker_(case_handler(std::move(target_for), reference), limits) {}

CaseResult IsolatedCases::run(const std::string& target, const Options& target_options, const Case& c,
                              const CheckOptions& options) {
  nlohmann::json request = {{"target", target},
                            {"options", target_options},
                            {"case", case_to_json(c)},
                            {"check", check_options_to_json(options)}};
  last_died_ = false;
  auto reply = worker_.call(request);
  if (auto* j = std::get_if<nlohmann::json>(&reply)) return result_from_json(*j);
  const WorkerDeath& death = std::get<WorkerDeath>(reply);
  last_died_ = true;
  CaseResult r;
  r.verdict = death.verdict;
  Finding f;
  f.verdict = death.verdict;
  f.check = Check::robustness;
  f.detail = death.detail;
  r.findings.push_back(f);
  return r;
}

}  // namespace sdpa
