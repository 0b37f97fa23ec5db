#pragma once
/// `sdpacheck explain`: one corpus entry taken apart for an engineer — the
/// verdict, diverging node and violated facts first, then the call in words,
/// the graph before and after each pass with every guard rule and hint
/// assumption, the results at each runtime size, the exact and target runs
/// node by node, and the error bound with every input.
#include <optional>
#include <string>

#include "harness/io/corpus.h"
#include "harness/check/reference.h"
#include "harness/check/target.h"
#include "harness/isolate/isolated_cases.h"

namespace sdpa {

std::string explain_entry(const CorpusEntry& e, const TargetRegistry& registry,
                          const ReferenceModel& reference);

/// Runs the entry in `isolated`'s worker first. When the case ends the
/// worker (crash, timeout, oom), the explanation is that death: the case is
/// not taken apart in this process, where it would end the command the same
/// way. nullopt when the case finishes; explain_entry then takes it apart.
std::optional<std::string> explain_worker_death(const CorpusEntry& e, const std::string& file,
                                                const TargetRegistry& registry, const ReferenceModel& reference,
                                                IsolatedCases& isolated);

/// The call in words: shapes, heads, lengths and symbols, mask, flags, data.
std::string describe_case(const Case& c);

}  // namespace sdpa
