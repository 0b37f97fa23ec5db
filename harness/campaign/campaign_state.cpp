#include "harness/campaign/campaign_state.h"

#include <algorithm>

#include "harness/case/case_json.h"
#include "harness/check/verdict.h"
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

// Every field is read through JsonObject, so that a damaged checkpoint names
// the field and what was expected ("done[0].cases: expected a count >= 0,
// got -5") instead of the JSON library's message.
int64_t count_field(JsonObject& o, const std::string& key) {
  const int64_t n = o.integer(key);
  if (n < 0) o.fail(key, "expected a count >= 0, got " + std::to_string(n));
  return n;
}

// A map of name -> count >= 0; `names_are_verdicts`: each key a verdict name.
std::map<std::string, int64_t> counts_field(JsonObject& o, const std::string& key, bool names_are_verdicts) {
  JsonObject m = o.object(key);
  std::map<std::string, int64_t> out;
  for (const auto& [name, _] : o.require(key).items()) {
    if (names_are_verdicts && !parse_verdict(name))
      throw InputError(m.field(name) + ": \"" + name + "\" is not a verdict name");
    out[name] = count_field(m, name);
  }
  return out;
}

std::vector<std::string> strings_field(JsonObject& o, const std::string& key) {
  const json& v = o.require(key);
  if (!v.is_array()) o.fail(key, "expected a list of strings, got " + json_kind(v));
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      throw InputError(o.field(key) + "[" + std::to_string(i) + "]: expected a string, got " + json_kind(v[i]));
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

Options options_field(JsonObject& o, const std::string& key) {
  JsonObject m = o.object(key);
  Options out;
  for (const auto& [name, _] : o.require(key).items()) out[name] = m.str(name);
  return out;
}

// The finding's own fields are those a worker sends (result_codec.h); a
// wrong one is named by the finding, not by the JSON library.
Finding finding_field(JsonObject& o, const std::string& key) {
  JsonObject f = o.object(key);
  const std::string verdict = f.str("verdict");
  if (!parse_verdict(verdict)) f.fail("verdict", "\"" + verdict + "\" is not a verdict name");
  try {
    return finding_from_exact_json(o.require(key));
  } catch (const nlohmann::json::exception&) {
    throw InputError(o.field(key) + ": not a finding as sdpacheck writes it (a field is missing or of the wrong kind)");
  }
}

WrittenFinding written_from_json(const json& j, const std::string& path) {
  JsonObject o(j, path);
  WrittenFinding w;
  w.verdict = o.str("verdict");
  if (!parse_verdict(w.verdict)) o.fail("verdict", "\"" + w.verdict + "\" is not a verdict name");
  w.check = o.str("check");
  w.signature = o.str("signature");
  w.file = o.str("file");
  w.summary = o.str("summary");
  w.iteration = count_field(o, "iteration");
  w.shrink_steps = static_cast<int>(std::min<int64_t>(count_field(o, "shrink_steps"), INT32_MAX));
  w.shrunk = case_from_json(o.require("shrunk"), o.field("shrunk"));
  w.finding = finding_field(o, "finding");
  w.graph_before = o.str("graph_before");
  w.graph_after = o.str("graph_after");
  return w;
}

// timing: [generate, oracle, kernels, compare] seconds.
Timing timing_field(JsonObject& o, const std::string& key) {
  const json& t = o.require(key);
  if (!t.is_array() || t.size() != 4 || !std::all_of(t.begin(), t.end(), [](const json& x) { return x.is_number(); }))
    o.fail(key, "expected a list of 4 numbers (seconds)");
  return {t[0].get<double>(), t[1].get<double>(), t[2].get<double>(), t[3].get<double>()};
}

uint64_t digest_field(JsonObject& o, const std::string& key) {
  const json& v = o.require(key);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    o.fail(key, "expected an integer in [0, 2^64), got " + v.dump());
  return v.get<uint64_t>();
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

TargetRun target_run_from_json(const json& j, const std::string& source, const std::string& path) {
  try {
    JsonObject o(j, path);
    TargetRun r;
    r.target = o.str("target");
    r.options = options_field(o, "options");
    r.cases = count_field(o, "cases");
    r.verdicts = counts_field(o, "verdicts", true);
    r.guard_rules = counts_field(o, "guard_rules", false);
    r.missed_rules = counts_field(o, "missed_rules", false);
    // Absent from checkpoints written before the completeness proof.
    if (o.has("refuted_rules")) r.refuted_rules = counts_field(o, "refuted_rules", false);
    JsonObject variants = o.object("variants");
    for (const auto& [name, _] : o.require("variants").items()) {
      JsonObject v = variants.object(name);
      VariantRun& out = r.variants[name];
      out.cases = count_field(v, "cases");
      out.verdicts = counts_field(v, "verdicts", true);
      out.counters = counts_field(v, "counters", false);
    }
    const json& findings = o.require("findings");
    if (!findings.is_array()) o.fail("findings", "expected a list, got " + json_kind(findings));
    for (size_t i = 0; i < findings.size(); ++i)
      r.findings.push_back(written_from_json(findings[i], o.field("findings") + "[" + std::to_string(i) + "]"));
    r.duplicates = count_field(o, "duplicates");
    r.interrupted = o.boolean("interrupted");
    r.worker_deaths = count_field(o, "worker_deaths");
    r.next_iteration = count_field(o, "next_iteration");
    r.iteration_digest = digest_field(o, "iteration_digest");
    r.crash_files = strings_field(o, "crash_files");
    r.timing = timing_field(o, "timing");
    r.seconds = o.number("seconds");
    return r;
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  }
}

}  // namespace sdpa
