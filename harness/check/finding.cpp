#include "harness/check/finding.h"

#include <cctype>

namespace sdpa {

namespace {

bool is_error_message(Verdict v) {
  return v == Verdict::crash || v == Verdict::invalid_rewrite || v == Verdict::unexpected_error ||
         v == Verdict::unsupported || v == Verdict::broken_invariant || v == Verdict::dtype_mismatch;
}

// "attn_mask shape mismatchattn_mask.size(0)=1 qSize=3" -> "...size(#)=# qSize=#";
// shapes "[2, s0]" -> "[]".
std::string blank_numbers(const std::string& text) {
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (depth > 0) {
      if (text[i] == ']' && --depth == 0) out += "[]";
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (out.empty() || out.back() != '#') out += '#';
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::string Finding::failure_key() const {
  // The op of the node where kernels diverge, not its name (names carry
  // counters); a soundness finding's node only names the rewrite.
  std::string op = check == Check::soundness ? "" : first_node;
  auto open = op.find('(');
  if (open != std::string::npos) op = op.substr(open);
  std::string key = std::string(verdict_name(verdict)) + "|" + check_name(check) + "|" + kernel_set + "|" + op;
  if (is_error_message(verdict)) key += "|" + blank_numbers(detail);
  return key;
}

std::string Finding::signature() const { return failure_key() + "|" + failure_class; }

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
  if (!f.failure_class.empty()) j["failure_class"] = f.failure_class;
  return j;
}

}  // namespace sdpa
