#pragma once
/// CaseResult <-> JSON, exactly (doubles to the bit), for results that come
/// back from a worker process. Graphs travel as their printed text; the
/// Graph objects (entry_graph, rewritten_graph) and a decision's assumed
/// facts do not travel: explain and the gate need them and run in-process.
#include <nlohmann/json.hpp>

#include "harness/check/check.h"

namespace sdpa {

nlohmann::json result_to_json(const CaseResult& r);
CaseResult result_from_json(const nlohmann::json& j);

/// Every field of a finding (finding_to_json leaves out empty ones).
nlohmann::json finding_to_exact_json(const Finding& f);
Finding finding_from_exact_json(const nlohmann::json& j);

nlohmann::json check_options_to_json(const CheckOptions& o);
CheckOptions check_options_from_json(const nlohmann::json& j);

}  // namespace sdpa
