#pragma once
/// run.json: counts per target and verdict, findings, seed and throughput.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/campaign/campaign.h"
#include "reports/campaign_stats.h"

namespace sdpa {

/// run.json's `format`.
inline constexpr const char* kRunFormat = "sdpacheck.run.v1";

struct RunSettings {
  uint64_t seed = 1;
  int64_t cases = 0;
  int max_size = 100;
  int shard = 0, shards = 1;
  std::string policy = "default";
  bool identity = false;
  /// Where the shard came from (cli/shard_source.h): "--shard",
  /// "JOB_COMPLETION_INDEX", ...; empty: not written.
  std::string shard_source;
  /// A merge of some shards of `shards`: their indices, written as "shards"
  /// in place of "shard". Empty: one shard.
  std::vector<int> shard_set;
};

/// Everything but timing depends only on the settings: the same seed and
/// options give the same bytes. `with_timing` adds the "timing" object;
/// `stats`, when given, each target's "coverage" (coverage_to_json).
nlohmann::json run_summary(const RunSettings& s, const std::vector<TargetRun>& runs, bool with_timing,
                           const CampaignStats* stats = nullptr);

/// Human summary printed at the end of a campaign.
std::string run_summary_text(const std::vector<TargetRun>& runs);

/// Writes dir/run.json atomically; returns its path.
std::string write_run_json(const std::string& dir, const nlohmann::json& summary);

}  // namespace sdpa
