#pragma once
/// sdpacheck merge: the shards of one campaign, run apart, put together as
/// the campaign run whole (README "Nightly at scale").
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/campaign/campaign.h"
#include "reports/campaign_stats.h"
#include "reports/run_summary.h"

namespace sdpa {

/// What one run folder holds: a shard, a merge of shards, or a whole campaign.
struct RunRecord {
  std::string source;  // the run folder, for messages
  RunSettings settings;
  /// Every setting the shards of one campaign share, by name ("seed",
  /// "cases", "targets", "options", ...); the shard count is in `settings`.
  nlohmann::json agreed;
  /// Shard index (of settings.shards) -> target -> the first iteration of
  /// that shard not run: the shard ran i = index, index + N, ... below it.
  std::map<int, std::map<std::string, int64_t>> held;
  std::vector<TargetRun> runs;  // in the campaign's target order
  std::map<std::string, TargetStats> stats;
  bool has_stats = false;  // false: an input had no statistics, so the merge has none
};

/// The first iteration not run of shard I/N after `cases` of its cases: shards
/// run their iterations in order, so the ones run are a prefix.
int64_t next_iteration_after(int index, int shards, int64_t cases);

/// Merges runs of one campaign. Counts, verdicts, guard and missed rules,
/// variants, worker restarts, timing and statistics are summed; findings are
/// deduplicated by signature, keeping the smallest shrunk case (fewest
/// elements over its runtime sizes, then the earliest iteration), in
/// iteration order; duplicates are every other failure. A run whose shards
/// and iterations another input holds counts once, so the merge is
/// idempotent and associative. When the shards cover every iteration of
/// every target, the result is the campaign run whole (shard 0/1).
/// Throws InputError naming both run folders and the field when settings
/// differ, or when two runs share a shard and neither holds the other.
RunRecord merge_runs(const std::vector<RunRecord>& inputs);

/// The elements of q, k, v and the mask, summed over the case's runtime sizes.
int64_t case_elements(const Case& c);

}  // namespace sdpa
