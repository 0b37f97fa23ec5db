#pragma once
/// The gate's outputs: a markdown summary fit for a pull-request comment and
/// the same facts as JSON.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/campaign/gate.h"

namespace sdpa {

struct GateReport {
  std::string target;
  std::string base_label, head_label;  // "guard=upstream", "decisions file x.json", ...
  uint64_t seed = 1;
  GateComparison comparison;
  std::map<GateClass, std::string> case_files;  // the case each class shows (example()), as a corpus file
  std::string verdict_changed_file;             // the smallest of comparison.verdict_changed, likewise
  int64_t corpus_files = 0, corpus_regressions = 0, corpus_invalid = 0;
  int64_t smoke_cases = 0, smoke_failures = 0;
  bool allow_missed = false;

  /// Why the gate fails; empty when it passes.
  std::vector<std::string> failures() const;
};

std::string gate_markdown(const GateReport& r);
nlohmann::json gate_json(const GateReport& r);

}  // namespace sdpa
