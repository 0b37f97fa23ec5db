#pragma once
/// Replaying corpus entries: run the case, compare the verdict with
/// `expect` and the recorded finding with what the checker now observes.
#include <functional>
#include <string>
#include <vector>

#include "harness/check/check.h"
#include "harness/io/corpus.h"
#include "harness/isolate/isolated_cases.h"

namespace sdpa {

enum class ReplayStatus {
  as_expected,  // observed == expect
  regression,   // expect pass, observed a failure
  fixed,        // expect a failure, observed pass: update the entry
  changed,      // expect one failure, observed another; or the finding differs
};
const char* replay_status_name(ReplayStatus s);

struct ReplayOutcome {
  ReplayStatus status = ReplayStatus::as_expected;
  std::string expected, observed;
  /// Fields of the recorded finding the run no longer shows, each as
  /// "field: recorded X, observed Y" (the status is then changed).
  std::vector<std::string> finding_changes;
  CaseResult result;
};

/// The recorded finding against the observed primary finding: verdict,
/// check, kernel set and first diverging node, each where the file records
/// it. A recorded check means the file records the kernel set: without a
/// kernel_set key the finding was the exact run's. Detail strings and
/// numbers are not compared.
std::vector<std::string> finding_changes(const nlohmann::json& recorded, const CaseResult& observed);

/// An entry's options split into the target's own and the harness's check
/// options (the `passes` key); throws InputError for a bad `passes` value.
std::pair<Options, CheckOptions> entry_options(const CorpusEntry& e);

/// How corpus files are read to be run: the size limits, and whether an
/// option naming an adapter program (`adapter:COMMAND`) may start it. A
/// corpus file is data that may come from elsewhere (a CI artifact, a
/// bug report), so such a file is refused unless the command allows it.
struct CorpusReading {
  SizeLimits limits;
  bool allow_adapters = false;
};

/// Throws InputError naming the first option whose value names an adapter
/// program (`adapter:COMMAND`): a file's options (a corpus file, a
/// decisions file) would start it.
void refuse_adapter_programs(const Options& options);

/// Reads a corpus file and validates it exactly as replay does: the JSON
/// bounds, the entry and its case within the limits, no adapter program
/// unless allowed, the target and its options. explain and repro read
/// files through it too. InputError messages start with the file name.
CorpusEntry read_replay_entry(const std::string& path, const TargetRegistry& registry,
                              const CorpusReading& reading = {});

/// Runs the entry's case in `isolated`'s worker, or in this process when null.
ReplayOutcome replay_entry(const CorpusEntry& e, const TargetRegistry& registry,
                           const ReferenceModel& reference, bool keep_graphs = false,
                           IsolatedCases* isolated = nullptr);

/// What replaying a set of files found.
struct ReplayTally {
  int64_t files = 0, as_expected = 0, regressions = 0, fixed = 0, invalid = 0;
  int64_t changed = 0;  // of regressions: another failure, or another finding, than recorded
  /// regression or changed
  bool regressed() const { return regressions > 0; }
};

/// Told of each file replayed: its outcome, or null and the error (naming the file).
using ReplayReport =
    std::function<void(const std::string& file, const ReplayOutcome* outcome, const std::string& error)>;

/// Replays each file in order and reports it to `report`: with its outcome,
/// or with the error (naming the file) when the file is invalid, or too
/// large for this process's memory.
ReplayTally replay_files(const std::vector<std::string>& files, const TargetRegistry& registry,
                         const ReferenceModel& reference, const CorpusReading& reading, bool keep_graphs,
                         const ReplayReport& report, IsolatedCases* isolated = nullptr);

/// A path given, or an entry under a folder given, that replay cannot read:
/// a folder without permission, a link loop, a FIFO or device.
struct CorpusProblem {
  std::string path, error;
};

/// Every *.json under the given files and folders, sorted. Throws
/// InputError for a path that does not exist, or (`refuse_empty_folders`)
/// a folder with no *.json nor problem under it: a replay of nothing must
/// not pass. A path or entry that cannot be read is put in `problems`, and
/// the rest collected; with `problems` null, it throws.
std::vector<std::string> collect_corpus_files(const std::vector<std::string>& paths,
                                              std::vector<CorpusProblem>* problems = nullptr,
                                              bool refuse_empty_folders = true);

/// Reports each problem as an invalid file ("PATH: why"), counted in `t`.
void report_corpus_problems(const std::vector<CorpusProblem>& problems, const ReplayReport& report, ReplayTally& t);

}  // namespace sdpa
