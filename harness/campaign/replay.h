#pragma once
/// Replaying corpus entries: run the case, compare the verdict with `expect`.
#include <functional>
#include <string>
#include <vector>

#include "harness/check/check.h"
#include "harness/io/corpus.h"

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

/// What replaying a set of files found.
struct ReplayTally {
  int64_t files = 0, as_expected = 0, regressions = 0, fixed = 0, invalid = 0;
  /// regression or changed
  bool regressed() const { return regressions > 0; }
};

/// Replays each file in order and reports it to `report`: with its outcome,
/// or with the error (naming the file) when the file is invalid.
ReplayTally replay_files(const std::vector<std::string>& files, const TargetRegistry& registry,
                         const ReferenceModel& reference, const SizeLimits& limits, bool keep_graphs,
                         const std::function<void(const std::string& file, const ReplayOutcome* outcome,
                                                  const std::string& error)>& report);

/// Every *.json under the given files and folders, sorted; throws InputError
/// for a path that does not exist.
std::vector<std::string> collect_corpus_files(const std::vector<std::string>& paths);

}  // namespace sdpa
