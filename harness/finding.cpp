#include "harness/finding.h"

namespace sdpa {

std::string Finding::signature() const {
  // The op of the diverging node, not its name: names carry counters.
  std::string op = first_node;
  auto open = op.find('(');
  if (open != std::string::npos) op = op.substr(open);
  return std::string(verdict_name(verdict)) + "|" + check_name(check) + "|" + kernel_set + "|" + op;
}

nlohmann::json finding_to_json(const Finding& f) {
  nlohmann::json j;
  j["verdict"] = verdict_name(f.verdict);
  j["check"] = check_name(f.check);
  if (!f.kernel_set.empty()) j["kernel_set"] = f.kernel_set;
  j["detail"] = f.detail;
  if (f.error != 0.0 || f.bound != 0.0) {
    j["error"] = f.error;
    j["bound"] = f.bound;
    j["error_ulps"] = f.error_ulps;
  }
  if (!f.first_node.empty()) j["first_node"] = f.first_node;
  if (!f.index.empty()) j["index"] = f.index;
  j["run"] = f.run;
  if (!f.sizes.empty()) j["sizes"] = f.sizes;
  if (!f.bound_inputs.is_null()) j["bound_inputs"] = f.bound_inputs;
  if (!f.violated_assumptions.empty()) j["violated_assumptions"] = f.violated_assumptions;
  return j;
}

}  // namespace sdpa
