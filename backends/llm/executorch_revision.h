#pragma once
/// The ExecuTorch trees the llm targets model (option "executorch"): main at
/// cff6f4dd32 and earlier trees, each named by its date and described by
/// the upstream changes it lacks (semantics/llm-and-cuda.md §1.4, §1.6,
/// §1.10, §2.1). Only the changes the page dates are modelled.
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sdpa::llm {

struct EtRevision {
  /// Before 411a01e1b9 (2026-07-08) custom_sdpa ran Float (and Char) only:
  /// its Meta kernel asserts float32 query, key and value ("Expected query
  /// to be float32 but got ..."), and the kernel's argument check reads
  /// "Query must be Float type".
  bool float_only = false;
  /// Before 9905026101 (2025-07-02) the mask had to have the query's dtype,
  /// a check whose text was "Attention mask must be a 2D tensor".
  bool mask_dtype_of_query = false;
  /// Before f3e8972de6 (2025-04-25) a kv block whose running row max was
  /// still -inf went through exp(-inf - -inf): NaN in the row's sum and
  /// output, where later trees skip the block.
  bool nan_for_masked_block = false;
  /// ReplaceSDPAWithCustomSDPAPass exists (added in 7054b1f955, 2025-04-28).
  bool has_export_pass = true;
};

/// Option value -> revision, newest first: "main" (cff6f4dd32), then the
/// tree of the day before each change.
const std::vector<std::pair<std::string, EtRevision>>& et_revisions();

/// The llm targets' option "executorch" (one of its choices) as a revision.
EtRevision et_revision_option(const std::map<std::string, std::string>& options);

}  // namespace sdpa::llm
