#pragma once
/// Which shard of a campaign this process runs: `--shard I/N`, or the index a
/// scheduler gives its array task (README "Nightly at scale").
#include <functional>
#include <string>

namespace sdpa::cli {

struct ShardChoice {
  int index = 0, count = 1;
  /// Where it came from: "--shard", "JOB_COMPLETION_INDEX",
  /// "SLURM_ARRAY_TASK_ID", "GTEST_SHARD_INDEX"; empty: no shard asked for (0/1).
  std::string source;
};

/// Reads an environment variable; null when unset.
using EnvLookup = std::function<const char*(const char*)>;

/// In order, the first that is given: `flag` ("I/N", empty: not given);
/// JOB_COMPLETION_INDEX (a Kubernetes Indexed Job), whose count comes from
/// `shards_flag` (0: not given) or SDPACHECK_SHARDS; SLURM_ARRAY_TASK_ID
/// with SLURM_ARRAY_TASK_COUNT, counted from SLURM_ARRAY_TASK_MIN in steps of
/// SLURM_ARRAY_TASK_STEP; GTEST_SHARD_INDEX with GTEST_TOTAL_SHARDS; else 0/1.
/// `shards_flag`, when given, must agree with the count found. Throws
/// InputError naming the variable or option and what it expects.
ShardChoice resolve_shard(const std::string& flag, int shards_flag, const EnvLookup& env);

/// "I/N".
std::string shard_text(int index, int count);

}  // namespace sdpa::cli
