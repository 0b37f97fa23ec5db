#include "cli/shard_source.h"

#include "harness/io/json_reader.h"

namespace sdpa::cli {
namespace {

// A whole non-negative decimal number (digits only), or an InputError naming `what`.
int64_t parse_count(const std::string& text, const std::string& what, const std::string& expected) {
  bool digits = !text.empty() && text.size() <= 9;
  for (char ch : text) digits = digits && ch >= '0' && ch <= '9';
  if (!digits) throw InputError(what + "='" + text + "': expected " + expected);
  return std::stoll(text);
}

ShardChoice from_flag(const std::string& s) {
  const std::string expected = "I/N with 0 <= I < N, for example 0/4";
  auto slash = s.find('/');
  if (slash == std::string::npos) throw InputError("--shard '" + s + "': expected " + expected);
  ShardChoice c;
  try {
    c.index = static_cast<int>(parse_count(s.substr(0, slash), "--shard", expected));
    c.count = static_cast<int>(parse_count(s.substr(slash + 1), "--shard", expected));
  } catch (const InputError&) {
    throw InputError("--shard '" + s + "': expected " + expected);
  }
  if (c.count < 1 || c.index >= c.count) throw InputError("--shard '" + s + "': expected " + expected);
  c.source = "--shard";
  return c;
}

// A variable that must be set when `because` is.
std::string required(const EnvLookup& env, const char* name, const std::string& because) {
  const char* v = env(name);
  if (!v) throw InputError(std::string(name) + " is not set, but " + because + " is: both are needed");
  return v;
}

ShardChoice from_kubernetes(const std::string& index, int shards_flag, const EnvLookup& env) {
  ShardChoice c;
  c.source = "JOB_COMPLETION_INDEX";
  c.index = static_cast<int>(parse_count(index, "JOB_COMPLETION_INDEX", "a whole number >= 0"));
  if (shards_flag > 0) {
    c.count = shards_flag;
  } else if (const char* n = env("SDPACHECK_SHARDS")) {
    c.count = static_cast<int>(parse_count(n, "SDPACHECK_SHARDS", "the shard count, a whole number >= 1"));
    if (c.count < 1) throw InputError(std::string("SDPACHECK_SHARDS='") + n + "': expected the shard count, a whole number >= 1");
  } else {
    throw InputError("JOB_COMPLETION_INDEX=" + index +
                     " (a Kubernetes Indexed Job) gives no shard count: pass --shards N or set "
                     "SDPACHECK_SHARDS to the Job's completions");
  }
  if (c.count < 1 || c.index >= c.count)
    throw InputError("JOB_COMPLETION_INDEX=" + index + ": expected an index below the shard count " +
                     std::to_string(c.count));
  return c;
}

ShardChoice from_slurm(const std::string& id_text, const EnvLookup& env) {
  ShardChoice c;
  c.source = "SLURM_ARRAY_TASK_ID";
  const std::string count = required(env, "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_ID");
  int64_t id = parse_count(id_text, "SLURM_ARRAY_TASK_ID", "a whole number >= 0");
  c.count = static_cast<int>(parse_count(count, "SLURM_ARRAY_TASK_COUNT", "a whole number >= 1"));
  const char* min = env("SLURM_ARRAY_TASK_MIN");
  const char* step = env("SLURM_ARRAY_TASK_STEP");
  int64_t lo = min ? parse_count(min, "SLURM_ARRAY_TASK_MIN", "a whole number >= 0") : 0;
  int64_t by = step ? parse_count(step, "SLURM_ARRAY_TASK_STEP", "a whole number >= 1") : 1;
  // --array=3-9:2 numbers its tasks 3, 5, 7, 9; shards count them from 0.
  if (by < 1 || id < lo || (id - lo) % by != 0 || (id - lo) / by >= c.count || c.count < 1)
    throw InputError("SLURM_ARRAY_TASK_ID=" + id_text + ": expected one of the " + count +
                     " tasks of an evenly spaced array from SLURM_ARRAY_TASK_MIN=" + std::to_string(lo) +
                     " in steps of " + std::to_string(by) + " (a list like --array=1,4,9 cannot be a shard)");
  c.index = static_cast<int>((id - lo) / by);
  return c;
}

ShardChoice from_gtest(const std::string& index, const EnvLookup& env) {
  ShardChoice c;
  c.source = "GTEST_SHARD_INDEX";
  const std::string total = required(env, "GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX");
  c.index = static_cast<int>(parse_count(index, "GTEST_SHARD_INDEX", "a whole number >= 0"));
  c.count = static_cast<int>(parse_count(total, "GTEST_TOTAL_SHARDS", "a whole number >= 1"));
  if (c.count < 1 || c.index >= c.count)
    throw InputError("GTEST_SHARD_INDEX=" + index + ": expected an index below GTEST_TOTAL_SHARDS=" + total);
  return c;
}

}  // namespace

std::string shard_text(int index, int count) { return std::to_string(index) + "/" + std::to_string(count); }

ShardChoice resolve_shard(const std::string& flag, int shards_flag, const EnvLookup& env) {
  ShardChoice c;
  if (!flag.empty()) {
    c = from_flag(flag);
  } else if (const char* k = env("JOB_COMPLETION_INDEX")) {
    c = from_kubernetes(k, shards_flag, env);
  } else if (const char* s = env("SLURM_ARRAY_TASK_ID")) {
    c = from_slurm(s, env);
  } else if (const char* g = env("GTEST_SHARD_INDEX")) {
    c = from_gtest(g, env);
  } else if (shards_flag > 0) {
    throw InputError("--shards " + std::to_string(shards_flag) +
                     " gives a count but no index: pass --shard I/N, or run under a scheduler that sets "
                     "JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID or GTEST_SHARD_INDEX");
  }
  if (shards_flag > 0 && c.count != shards_flag)
    throw InputError("--shards " + std::to_string(shards_flag) + " disagrees with the shard count " +
                     std::to_string(c.count) + " of " + c.source);
  return c;
}

}  // namespace sdpa::cli
