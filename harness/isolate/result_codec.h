#pragma once
/// CaseResult <-> JSON, exactly (doubles to the bit), for results that come
/// back from a worker process, and the flat form of a result the command
/// only counts. Graphs travel as their printed text; the
/// Graph objects (entry_graph, rewritten_graph) and a decision's assumed
/// facts do not travel: explain and the gate need them and run in-process.
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "harness/check/check.h"
#include "harness/io/wire.h"

namespace sdpa {

nlohmann::json result_to_json(const CaseResult& r);
CaseResult result_from_json(const nlohmann::json& j);

/// A result as the command needs it for a case it only counts (a campaign
/// without an on_case hook, a verdict it does not record): the verdict,
/// the timing, the accuracy samples and the counters whole, whether both
/// oracles spoke, and of each decision the deciding rule, whether it
/// rewrote and where a proof refuted it. The findings, the rules' outcomes
/// and the graphs are left out; everything sent reads back to the bit
/// (harness/io/wire.h).
std::string counted_result_to_bytes(const CaseResult& r);
/// Throws std::runtime_error on bytes counted_result_to_bytes did not write.
CaseResult counted_result_from_bytes(std::string_view bytes);

/// Every field of a finding (finding_to_json leaves out empty ones).
nlohmann::json finding_to_exact_json(const Finding& f);
Finding finding_from_exact_json(const nlohmann::json& j);

nlohmann::json check_options_to_json(const CheckOptions& o);
CheckOptions check_options_from_json(const nlohmann::json& j);
/// The same, in a WireWriter's flat form.
void write_check_options(WireWriter& out, const CheckOptions& o);
CheckOptions read_check_options(WireReader& in);

}  // namespace sdpa
