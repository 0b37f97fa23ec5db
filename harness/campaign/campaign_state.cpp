#include "harness/campaign/campaign_state.h"

#include "harness/case/case_json.h"
#include "harness/io/json_reader.h"
#include "harness/isolate/result_codec.h"

namespace sdpa {
namespace {

using nlohmann::json;

json written_to_json(const WrittenFinding& w) {
  return {{"verdict", w.verdict},           {"check", w.check},
          {"signature", w.signature},       {"file", w.file},
          {"summary", w.summary},           {"iteration", w.iteration},
          {"shrink_steps", w.shrink_steps}, {"shrunk", case_to_json(w.shrunk)},
          {"finding", finding_to_exact_json(w.finding)},
          {"graph_before", w.graph_before}, {"graph_after", w.graph_after}};
}

WrittenFinding written_from_json(const json& j) {
  WrittenFinding w;
  w.verdict = j.at("verdict").get<std::string>();
  w.check = j.at("check").get<std::string>();
  w.signature = j.at("signature").get<std::string>();
  w.file = j.at("file").get<std::string>();
  w.summary = j.at("summary").get<std::string>();
  w.iteration = j.at("iteration").get<int64_t>();
  w.shrink_steps = j.at("shrink_steps").get<int>();
  w.shrunk = case_from_json(j.at("shrunk"), "shrunk");
  w.finding = finding_from_exact_json(j.at("finding"));
  w.graph_before = j.at("graph_before").get<std::string>();
  w.graph_after = j.at("graph_after").get<std::string>();
  return w;
}

}  // namespace

json target_run_to_json(const TargetRun& r) {
  json variants = json::object(), findings = json::array();
  for (const auto& [name, v] : r.variants)
    variants[name] = {{"cases", v.cases}, {"verdicts", v.verdicts}, {"counters", v.counters}};
  for (const auto& w : r.findings) findings.push_back(written_to_json(w));
  return {{"target", r.target},
          {"options", r.options},
          {"cases", r.cases},
          {"verdicts", r.verdicts},
          {"guard_rules", r.guard_rules},
          {"missed_rules", r.missed_rules},
          {"refuted_rules", r.refuted_rules},
          {"variants", variants},
          {"findings", findings},
          {"duplicates", r.duplicates},
          {"interrupted", r.interrupted},
          {"worker_deaths", r.worker_deaths},
          {"next_iteration", r.next_iteration},
          {"iteration_digest", r.iteration_digest},
          {"crash_files", r.crash_files},
          {"timing", {r.timing.generate, r.timing.oracle, r.timing.kernels, r.timing.compare}},
          {"seconds", r.seconds}};
}

TargetRun target_run_from_json(const json& j, const std::string& source) {
  try {
    TargetRun r;
    r.target = j.at("target").get<std::string>();
    r.options = j.at("options").get<Options>();
    r.cases = j.at("cases").get<int64_t>();
    r.verdicts = j.at("verdicts").get<std::map<std::string, int64_t>>();
    r.guard_rules = j.at("guard_rules").get<std::map<std::string, int64_t>>();
    r.missed_rules = j.at("missed_rules").get<std::map<std::string, int64_t>>();
    // Absent from checkpoints written before the completeness proof.
    if (j.contains("refuted_rules")) r.refuted_rules = j.at("refuted_rules").get<std::map<std::string, int64_t>>();
    for (const auto& [name, v] : j.at("variants").items()) {
      VariantRun& out = r.variants[name];
      out.cases = v.at("cases").get<int64_t>();
      out.verdicts = v.at("verdicts").get<std::map<std::string, int64_t>>();
      out.counters = v.at("counters").get<std::map<std::string, int64_t>>();
    }
    for (const auto& w : j.at("findings")) r.findings.push_back(written_from_json(w));
    r.duplicates = j.at("duplicates").get<int64_t>();
    r.interrupted = j.at("interrupted").get<bool>();
    r.worker_deaths = j.at("worker_deaths").get<int64_t>();
    r.next_iteration = j.at("next_iteration").get<int64_t>();
    r.iteration_digest = j.at("iteration_digest").get<uint64_t>();
    r.crash_files = j.at("crash_files").get<std::vector<std::string>>();
    const json& t = j.at("timing");
    r.timing = {t.at(0).get<double>(), t.at(1).get<double>(), t.at(2).get<double>(), t.at(3).get<double>()};
    r.seconds = j.at("seconds").get<double>();
    return r;
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  } catch (const std::exception& e) {
    throw InputError(source + ": not a campaign state: " + e.what());
  }
}

}  // namespace sdpa
