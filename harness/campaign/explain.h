#pragma once
/// `sdpacheck explain`: one corpus entry taken apart for an engineer — the
/// verdict, diverging node and violated facts first, then the call in words,
/// the graph before and after each pass with every guard rule and hint
/// assumption, the results at each runtime size, the exact and target runs
/// node by node, and the error bound with every input.
#include <string>

#include "harness/io/corpus.h"
#include "harness/check/reference.h"
#include "harness/check/target.h"

namespace sdpa {

std::string explain_entry(const CorpusEntry& e, const TargetRegistry& registry,
                          const ReferenceModel& reference);

/// The call in words: shapes, heads, lengths and symbols, mask, flags, data.
std::string describe_case(const Case& c);

}  // namespace sdpa
