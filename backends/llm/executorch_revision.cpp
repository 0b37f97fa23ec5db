#include "backends/llm/executorch_revision.h"

#include "harness/io/json_reader.h"

namespace sdpa::llm {

const std::vector<std::pair<std::string, EtRevision>>& et_revisions() {
  static const std::vector<std::pair<std::string, EtRevision>> r = {
      {"main", {}},
      {"2026-07-07", {/*float_only=*/true, /*mask_dtype_of_query=*/false, /*nan_for_masked_block=*/false}},
      {"2025-07-01", {/*float_only=*/true, /*mask_dtype_of_query=*/true, /*nan_for_masked_block=*/false}},
      {"2025-04-24", {/*float_only=*/true, /*mask_dtype_of_query=*/true, /*nan_for_masked_block=*/true,
                      /*has_export_pass=*/false}},
  };
  return r;
}

EtRevision et_revision_option(const std::map<std::string, std::string>& options) {
  const std::string& name = options.at("executorch");
  for (const auto& [value, revision] : et_revisions())
    if (value == name) return revision;
  std::string names;
  for (const auto& [value, revision] : et_revisions()) names += (names.empty() ? "" : ", ") + value;
  throw InputError("option 'executorch' of target llm: expected one of " + names + ", got '" + name + "'");
}

}  // namespace sdpa::llm
