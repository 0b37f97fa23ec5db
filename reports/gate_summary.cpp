#include "reports/gate_summary.h"

#include <sstream>

namespace sdpa {

std::vector<std::string> GateReport::failures() const {
  std::vector<std::string> out;
  auto count = [&](GateClass c) { return comparison.changes.at(c).size(); };
  if (count(GateClass::newly_unsound))
    out.push_back(std::to_string(count(GateClass::newly_unsound)) + " decision(s) newly unsound");
  if (count(GateClass::newly_missed) && !allow_missed)
    out.push_back(std::to_string(count(GateClass::newly_missed)) +
                  " rewrite(s) newly missed (pass --allow-missed to accept)");
  if (corpus_regressions) out.push_back(std::to_string(corpus_regressions) + " corpus file(s) no longer replay as expected");
  if (corpus_invalid) out.push_back(std::to_string(corpus_invalid) + " corpus file(s) invalid");
  if (smoke_failures) out.push_back(std::to_string(smoke_failures) + " smoke case(s) failed");
  return out;
}

namespace {

// Which case of a class the report shows: example() may pass over smaller
// cases for one that shows the defect.
std::string example_rule(const std::vector<GateChange>& changes, const GateChange& shown) {
  if (&shown == smallest(changes)) return "smallest case";
  return shown.head.verdict != shown.base.verdict ? "smallest case ending in a new finding"
                                                  : "smallest case ending in a finding";
}

// "kept (rule R), unsound (rejected); refuted at s0 = 3 (...)".
std::string decision_words(const GateDecision& d) {
  const std::string what = d.rule == "pass-raised"    ? "the pass raised (export fails)"
                           : d.rule == "process-died" ? "the case's process died"
                           : d.rewrite                ? "rewritten"
                                                      : "kept (rule " + d.rule + ")";
  std::string out = what + (d.sound ? ", sound" : ", unsound") + " (" + d.verdict + ")";
  if (!d.refuted_at.empty()) out += "; sound at every runtime size, refuted at " + d.refuted_at;
  return out;
}

// "unexpected-error → crash" -> how many, for the decisions unsound in both
// whose case verdict changed.
std::map<std::string, int64_t> verdict_transitions(const std::vector<GateChange>& changes) {
  std::map<std::string, int64_t> out;
  for (const auto& ch : changes) ++out[ch.base.verdict + " → " + ch.head.verdict];
  return out;
}

void change_lines(std::ostringstream& o, const GateChange& s, const std::string& file) {
  o << "\n`" << case_summary(s.head.c) << "`\n\n"
    << (s.head.node.empty() ? "" : "- node: `" + s.head.node + "` (pass " + s.head.pass + ")\n")
    << "- before: " << decision_words(s.base) << "\n"
    << "- after: " << decision_words(s.head) << "\n";
  if (!file.empty()) o << "- replay: `sdpacheck replay " << file << "`, explain: `sdpacheck explain " << file << "`\n";
}

}  // namespace

std::string gate_markdown(const GateReport& r) {
  std::ostringstream o;
  const auto fails = r.failures();
  o << "## sdpacheck gate: " << r.target << " `" << r.base_label << "` → `" << r.head_label << "`\n\n";
  o << (fails.empty() ? "**Gate passed.**" : "**Gate failed:** ");
  for (size_t i = 0; i < fails.size(); ++i) o << (i ? "; " : "") << fails[i];
  o << "\n\n" << r.comparison.cases << " cases (seed " << r.seed << "), " << r.comparison.decisions
    << " guard decisions, " << r.comparison.unchanged << " decisions unchanged (" << r.comparison.still_unsound
    << " of them unsound in both, " << r.comparison.still_missed << " missed in both).";
  if (r.comparison.base_refuted || r.comparison.head_refuted)
    o << " Sound at every runtime size but refuted by the completeness proof at a size no runtime entry "
         "tried: "
      << r.comparison.base_refuted << " decision(s) before, " << r.comparison.head_refuted << " after.";
  o << "\n\n";
  o << "| class | decisions | effect on the gate |\n|---|---:|---|\n";
  for (GateClass c : gate_classes()) {
    std::string effect = c == GateClass::newly_unsound ? "fails"
                         : c == GateClass::newly_missed ? (r.allow_missed ? "allowed" : "fails")
                                                        : "";
    o << "| " << gate_class_name(c) << " | " << r.comparison.changes.at(c).size() << " | " << effect << " |\n";
  }
  const auto& moved = r.comparison.verdict_changed;
  if (!moved.empty()) {
    o << "\nUnsound in both but ending in another verdict: " << moved.size() << " decision(s) (";
    const char* separator = "";
    for (const auto& [transition, n] : verdict_transitions(moved)) {
      o << separator << "`" << transition << "` " << n;
      separator = ", ";
    }
    o << "). They do not fail the gate: the failure is of another kind.\n";
  }
  for (GateClass c : gate_classes()) {
    const GateChange* s = example(c, r.comparison.changes.at(c));
    if (!s) continue;
    o << "\n### " << gate_class_name(c) << ": " << example_rule(r.comparison.changes.at(c), *s) << "\n";
    auto it = r.case_files.find(c);
    change_lines(o, *s, it != r.case_files.end() ? it->second : "");
  }
  if (const GateChange* s = smallest(moved)) {
    o << "\n### unsound in both, another verdict: smallest case\n";
    change_lines(o, *s, r.verdict_changed_file);
  }
  o << "\nCorpus replay: " << r.corpus_files << " file(s), " << r.corpus_regressions << " regression(s), "
    << r.corpus_invalid << " invalid. Smoke: " << r.smoke_cases << " case(s), " << r.smoke_failures
    << " failure(s).\n";
  return o.str();
}

nlohmann::json gate_json(const GateReport& r) {
  nlohmann::json j;
  j["target"] = r.target;
  j["base"] = r.base_label;
  j["head"] = r.head_label;
  j["seed"] = r.seed;
  j["cases"] = r.comparison.cases;
  j["decisions"] = r.comparison.decisions;
  j["unchanged"] = r.comparison.unchanged;
  j["still_unsound"] = r.comparison.still_unsound;
  j["still_missed"] = r.comparison.still_missed;
  j["base_refuted"] = r.comparison.base_refuted;
  j["head_refuted"] = r.comparison.head_refuted;
  j["classes"] = nlohmann::json::object();
  for (GateClass c : gate_classes()) {
    nlohmann::json cls;
    cls["count"] = r.comparison.changes.at(c).size();
    cls["indices"] = nlohmann::json::array();
    for (const auto& ch : r.comparison.changes.at(c)) cls["indices"].push_back(ch.head.index);
    if (const GateChange* s = example(c, r.comparison.changes.at(c))) {
      cls["smallest"] = case_summary(s->head.c);  // the case shown, as example_rule says
      cls["example_rule"] = example_rule(r.comparison.changes.at(c), *s);
      if (!s->base.refuted_at.empty()) cls["smallest_base_refuted_at"] = s->base.refuted_at;
      if (!s->head.refuted_at.empty()) cls["smallest_head_refuted_at"] = s->head.refuted_at;
    }
    if (auto it = r.case_files.find(c); it != r.case_files.end()) cls["file"] = it->second;
    j["classes"][gate_class_name(c)] = cls;
  }
  nlohmann::json moved;
  moved["count"] = r.comparison.verdict_changed.size();
  moved["transitions"] = verdict_transitions(r.comparison.verdict_changed);
  if (const GateChange* s = smallest(r.comparison.verdict_changed)) moved["smallest"] = case_summary(s->head.c);
  if (!r.verdict_changed_file.empty()) moved["file"] = r.verdict_changed_file;
  j["still_unsound_verdict_changed"] = moved;
  j["corpus"] = {{"files", r.corpus_files}, {"regressions", r.corpus_regressions}, {"invalid", r.corpus_invalid}};
  j["smoke"] = {{"cases", r.smoke_cases}, {"failures", r.smoke_failures}};
  j["failures"] = r.failures();
  j["passed"] = r.failures().empty();
  return j;
}

}  // namespace sdpa
