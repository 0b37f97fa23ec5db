#pragma once
/// What a check observed on one case: the verdict and every number behind it.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/ir/shape_env.h"
#include "harness/check/verdict.h"

namespace sdpa {

struct Finding {
  Verdict verdict = Verdict::pass;
  Check check = Check::soundness;
  std::string kernel_set;  // empty for the exact (soundness) run
  std::string detail;      // one line: what differs, or the error message
  double error = 0.0;      // max |candidate - golden|
  double bound = 0.0;      // the bound it was held to
  double error_ulps = 0.0; // error in units in the last place of the output dtype
  std::string first_node;  // first node whose value diverges
  std::vector<int64_t> index;  // output index of the worst element
  int run = 0;                 // index into Case::runs()
  Assignment sizes;            // the runtime sizes of that run
  nlohmann::json bound_inputs;
  std::vector<std::string> violated_assumptions;
  std::string failure_class;  // the target's defect class of the case

  /// What kind of failure this is, independent of the case: verdict, check,
  /// kernel set, the op of the diverging node, and for an error its message
  /// with numbers blanked. Shrinking keeps it.
  std::string failure_key() const;
  /// failure_key plus the target's defect class: what deduplicates findings.
  std::string signature() const;
};

nlohmann::json finding_to_json(const Finding& f);

}  // namespace sdpa
