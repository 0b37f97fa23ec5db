#include "cli/shard_source.h"

#include <map>

#include <gtest/gtest.h>

#include "harness/io/json_reader.h"

namespace sdpa::cli {
namespace {

// An environment of exactly these variables.
EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

std::string error_of(const std::string& flag, int shards, std::map<std::string, std::string> vars) {
  try {
    resolve_shard(flag, shards, env_of(std::move(vars)));
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ShardSource, NothingGivenIsTheWholeCampaign) {
  ShardChoice c = resolve_shard("", 0, env_of({}));
  EXPECT_EQ(c.index, 0);
  EXPECT_EQ(c.count, 1);
  EXPECT_EQ(c.source, "");
}

TEST(ShardSource, FlagWinsOverEveryVariable) {
  ShardChoice c = resolve_shard("2/5", 0,
                                env_of({{"JOB_COMPLETION_INDEX", "1"}, {"SDPACHECK_SHARDS", "3"},
                                        {"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_COUNT", "2"},
                                        {"GTEST_SHARD_INDEX", "0"}, {"GTEST_TOTAL_SHARDS", "2"}}));
  EXPECT_EQ(shard_text(c.index, c.count), "2/5");
  EXPECT_EQ(c.source, "--shard");
}

TEST(ShardSource, KubernetesIndexTakesItsCountFromTheFlagOrTheVariable) {
  ShardChoice a = resolve_shard("", 4, env_of({{"JOB_COMPLETION_INDEX", "3"}}));
  EXPECT_EQ(shard_text(a.index, a.count), "3/4");
  EXPECT_EQ(a.source, "JOB_COMPLETION_INDEX");
  ShardChoice b = resolve_shard("", 0, env_of({{"JOB_COMPLETION_INDEX", "0"}, {"SDPACHECK_SHARDS", "2"}}));
  EXPECT_EQ(shard_text(b.index, b.count), "0/2");
  EXPECT_NE(error_of("", 0, {{"JOB_COMPLETION_INDEX", "1"}}).find("pass --shards N or set SDPACHECK_SHARDS"),
            std::string::npos);
  EXPECT_NE(error_of("", 4, {{"JOB_COMPLETION_INDEX", "4"}}).find("JOB_COMPLETION_INDEX=4: expected an index below"),
            std::string::npos);
  EXPECT_NE(error_of("", 4, {{"JOB_COMPLETION_INDEX", "x1"}}).find("JOB_COMPLETION_INDEX='x1': expected a whole"),
            std::string::npos);
  EXPECT_NE(error_of("", 0, {{"JOB_COMPLETION_INDEX", "1"}, {"SDPACHECK_SHARDS", "0"}}).find("SDPACHECK_SHARDS"),
            std::string::npos);
}

TEST(ShardSource, KubernetesBeforeSlurmBeforeGtest) {
  std::map<std::string, std::string> all = {{"JOB_COMPLETION_INDEX", "1"}, {"SDPACHECK_SHARDS", "3"},
                                            {"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_COUNT", "2"},
                                            {"GTEST_SHARD_INDEX", "0"}, {"GTEST_TOTAL_SHARDS", "5"}};
  EXPECT_EQ(resolve_shard("", 0, env_of(all)).source, "JOB_COMPLETION_INDEX");
  all.erase("JOB_COMPLETION_INDEX");
  EXPECT_EQ(resolve_shard("", 0, env_of(all)).source, "SLURM_ARRAY_TASK_ID");
  all.erase("SLURM_ARRAY_TASK_ID");
  ShardChoice g = resolve_shard("", 0, env_of(all));
  EXPECT_EQ(g.source, "GTEST_SHARD_INDEX");
  EXPECT_EQ(shard_text(g.index, g.count), "0/5");
}

TEST(ShardSource, SlurmCountsFromTheArraysFirstTaskInItsSteps) {
  // sbatch --array=1-8: ids 1..8, MIN 1.
  ShardChoice a = resolve_shard("", 0, env_of({{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_COUNT", "8"},
                                               {"SLURM_ARRAY_TASK_MIN", "1"}}));
  EXPECT_EQ(shard_text(a.index, a.count), "0/8");
  // sbatch --array=3-9:2: ids 3, 5, 7, 9.
  ShardChoice b = resolve_shard("", 0, env_of({{"SLURM_ARRAY_TASK_ID", "7"}, {"SLURM_ARRAY_TASK_COUNT", "4"},
                                               {"SLURM_ARRAY_TASK_MIN", "3"}, {"SLURM_ARRAY_TASK_STEP", "2"}}));
  EXPECT_EQ(shard_text(b.index, b.count), "2/4");
  EXPECT_NE(error_of("", 0, {{"SLURM_ARRAY_TASK_ID", "3"}}).find("SLURM_ARRAY_TASK_COUNT is not set"),
            std::string::npos);
  // --array=1,4,9: MIN 1, COUNT 3, so id 9 is past the third task.
  EXPECT_NE(error_of("", 0, {{"SLURM_ARRAY_TASK_ID", "9"}, {"SLURM_ARRAY_TASK_COUNT", "3"},
                             {"SLURM_ARRAY_TASK_MIN", "1"}})
                .find("SLURM_ARRAY_TASK_ID=9: expected one of the 3 tasks"),
            std::string::npos);
  EXPECT_NE(error_of("", 0, {{"SLURM_ARRAY_TASK_ID", "-1"}, {"SLURM_ARRAY_TASK_COUNT", "3"}})
                .find("SLURM_ARRAY_TASK_ID='-1'"),
            std::string::npos);
}

TEST(ShardSource, GtestNeedsBothVariables) {
  EXPECT_NE(error_of("", 0, {{"GTEST_SHARD_INDEX", "1"}}).find("GTEST_TOTAL_SHARDS is not set"), std::string::npos);
  EXPECT_NE(error_of("", 0, {{"GTEST_SHARD_INDEX", "2"}, {"GTEST_TOTAL_SHARDS", "2"}})
                .find("expected an index below GTEST_TOTAL_SHARDS=2"),
            std::string::npos);
}

TEST(ShardSource, BadFlagsAndDisagreeingCounts) {
  for (const char* bad : {"3/3", "1/0", "a/2", "1", "-1/2", "1/2/3", "1/ 2", "+1/2"}) {
    EXPECT_NE(error_of(bad, 0, {}).find("expected I/N"), std::string::npos) << bad;
  }
  EXPECT_NE(error_of("1/3", 4, {}).find("--shards 4 disagrees with the shard count 3 of --shard"), std::string::npos);
  EXPECT_NE(error_of("", 3, {}).find("gives a count but no index"), std::string::npos);
  EXPECT_NE(error_of("", 3, {{"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_COUNT", "2"}})
                .find("disagrees with the shard count 2 of SLURM_ARRAY_TASK_ID"),
            std::string::npos);
}

}  // namespace
}  // namespace sdpa::cli
