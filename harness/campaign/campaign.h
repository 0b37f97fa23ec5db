#pragma once
/// A fuzzing campaign: RapidCheck-generated cases per target, checked,
/// failures shrunk to a minimal case and written to the corpus.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "harness/check/check.h"
#include "harness/isolate/worker.h"
#include "harness/io/corpus.h"
#include "harness/check/target.h"

namespace sdpa {

/// Makes the case generator for a target's case space (generators/ provides it).
using CaseGeneratorFactory = std::function<rc::Gen<Case>(const CaseSpace&)>;

struct TargetRun;

struct CampaignOptions {
  uint64_t seed = 1;
  int64_t cases = 1000;        // per target; the global iteration count
  double time_limit = 0.0;     // seconds per target; 0: none
  int max_size = 100;          // RapidCheck size cycles 0..max_size
  int shard = 0, shards = 1;   // this process runs iterations i with i % shards == shard
  std::string corpus_dir;      // empty: do not write findings
  int max_shrink_steps = 500;  // case evaluations spent shrinking one failure
  bool record_warnings = false;  // also shrink and write missed-rewrite
  int64_t stop_after = 0;        // stop a target after this many distinct findings; 0: never
  CheckOptions check;
  /// Run every case, shrink steps included, in a worker process (worker.h)
  /// under `limits`: a crash, hang or memory overrun becomes a crash,
  /// timeout or oom finding and the campaign goes on. false: in this process.
  bool isolate = false;
  WorkerLimits limits;
  /// Isolated: cases checked side by side, each in its own worker. Results
  /// are taken in iteration order: counts, findings and files are those of
  /// jobs = 1.
  int jobs = 1;
  /// Where a generated case that ended a worker is saved, before shrinking,
  /// as crash-<hash>.json (a corpus entry); empty: not saved.
  std::string crash_dir;
  std::function<void(const std::string&)> progress;  // called about twice a second
  /// Called with the run so far, and the state a campaign resumes from
  /// (campaign_state.h), every checkpoint_seconds and after each finding:
  /// the command writes run.json and the checkpoint with them.
  std::function<void(const TargetRun& so_far, const nlohmann::json& state)> checkpoint;
  double checkpoint_seconds = 1.0;
  /// A state a checkpoint gave: the campaign goes on from there, with the
  /// same findings and counts as if it had never stopped. null: from the start.
  nlohmann::json resume;
  /// Polled between cases; true ends the campaign early (SIGINT, SIGTERM),
  /// with what was done so far and TargetRun::interrupted set.
  std::function<bool()> stop_requested;
  /// Called with every generated case and its result (not shrink steps).
  std::function<void(const Case&, const CaseResult&)> on_case;
  /// Called with a summary of every generated case and its result: the
  /// summary is `summarize` of the case, made where the case was drawn (in
  /// a worker, when isolated), in bytes only the two hooks read. Without
  /// on_case, a command with workers then reads back each case's summary
  /// and variant instead of the case, and for a case it does not record,
  /// only what it counts of the result (counted_result_to_bytes).
  std::function<std::string(const Case&)> summarize;
  std::function<void(const std::string& summary, const CaseResult&)> on_summary;
};

struct WrittenFinding {
  std::string verdict, check, signature, file, summary;
  int64_t iteration = 0;
  int shrink_steps = 0;
  Case shrunk;
  Finding finding;
  std::string graph_before, graph_after;  // the shrunk case's graphs, printed
};

/// The cases of one entry variant: their verdicts and the target's counters, summed.
struct VariantRun {
  int64_t cases = 0;
  std::map<std::string, int64_t> verdicts;
  std::map<std::string, int64_t> counters;
};

struct TargetRun {
  std::string target;
  Options options;
  int64_t cases = 0;
  std::map<std::string, int64_t> verdicts;  // verdict name -> cases
  std::map<std::string, int64_t> guard_rules;  // deciding rule -> decisions
  std::map<std::string, int64_t> missed_rules;  // deciding rule -> missed-rewrite cases
  /// Deciding rule -> kept nodes whose forced rewrite held at every runtime
  /// size but failed the completeness proof (Decision::refuted_at): the
  /// guard was right, at a size no runtime entry tried.
  std::map<std::string, int64_t> refuted_rules;
  /// Per Case::variant, for targets whose entry form has variants or counters.
  std::map<std::string, VariantRun> variants;
  std::vector<WrittenFinding> findings;      // one per distinct signature
  int64_t duplicates = 0;  // failures whose signature was already found
  bool interrupted = false;  // stop_requested ended it before its last case
  int64_t worker_deaths = 0;  // isolated: cases (and shrink steps) that ended a worker
  /// The first global iteration not run: `cases` when the shard ran to the
  /// end, earlier when --time, --stop-after or a signal stopped it.
  int64_t next_iteration = 0;
  /// The sum (mod 2^64) of case_seed over the iterations run: shards of a
  /// campaign that ran disjoint iterations covering it sum to the digest of
  /// the campaign run whole, whatever the order.
  uint64_t iteration_digest = 0;
  std::vector<std::string> crash_files;  // isolated: the saved cases that ended a worker
  Timing timing;
  double seconds = 0.0;
};

/// Per-case seed: a hash of (campaign seed, target, global iteration), so
/// cases do not depend on the shard count.
uint64_t case_seed(uint64_t campaign_seed, const std::string& target, int64_t iteration);

/// In process, a campaign draws this many of its shard's cases in a run
/// (the one to check and the next ones) whenever none is waiting: drawing
/// one case between two checks finds the generators' code and data evicted
/// by the check. A case depends only on its seed and size, so no case changes.
constexpr int kCasesDrawnAhead = 16;

TargetRun run_target_campaign(const Target& target, const ReferenceModel& reference,
                              const CaseGeneratorFactory& generators, const CampaignOptions& options);

/// Shrinks `failing` while `still_fails` holds, depth-first over RapidCheck's
/// shrink tree; returns the smallest case found and the steps taken.
std::pair<Case, int> shrink_case(const rc::Shrinkable<Case>& failing,
                                 const std::function<bool(const Case&)>& still_fails, int max_steps);

}  // namespace sdpa
