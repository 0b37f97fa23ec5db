#pragma once
/// Replaying corpus entries: run the case, compare the verdict with `expect`.
#include <string>
#include <vector>

#include "harness/check.h"
#include "harness/corpus.h"

namespace sdpa {

enum class ReplayStatus {
  as_expected,  // observed == expect
  regression,   // expect pass, observed a failure
  fixed,        // expect a failure, observed pass: update the entry
  changed,      // expect one failure, observed another
};
const char* replay_status_name(ReplayStatus s);

struct ReplayOutcome {
  ReplayStatus status = ReplayStatus::as_expected;
  std::string expected, observed;
  CaseResult result;
};

/// An entry's options split into the target's own and the harness's check
/// options (the `passes` key); throws InputError for a bad `passes` value.
std::pair<Options, CheckOptions> entry_options(const CorpusEntry& e);

ReplayOutcome replay_entry(const CorpusEntry& e, const TargetRegistry& registry,
                           const ReferenceModel& reference, bool keep_graphs = false);

/// Every *.json under the given files and folders, sorted; throws InputError
/// for a path that does not exist.
std::vector<std::string> collect_corpus_files(const std::vector<std::string>& paths);

}  // namespace sdpa
