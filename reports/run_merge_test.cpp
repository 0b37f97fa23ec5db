#include "reports/run_merge.h"

#include <gtest/gtest.h>

#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

Case sized(int64_t lq, int64_t lkv) {
  Case c;
  c.q_len = lq;
  c.kv_len = lkv;
  c.head_dim = c.value_dim = 2;
  return c;
}

WrittenFinding finding(const std::string& signature, int64_t iteration, int64_t lq) {
  WrittenFinding w;
  w.verdict = "unsound-rewrite";
  w.check = "soundness";
  w.signature = signature;
  w.iteration = iteration;
  w.shrunk = sized(lq, 1);
  w.summary = case_summary(w.shrunk);
  w.file = "corpus/t/t-" + signature + ".json";
  return w;
}

// Shard `index` of `shards` of a campaign of `cases` per target, having run
// `ran` cases of target "t" with these findings and `duplicates` other failures.
RunRecord shard(int index, int shards, int64_t ran, std::vector<WrittenFinding> findings, int64_t duplicates,
                int64_t cases = 12) {
  RunRecord r;
  r.source = "runs/shard-" + std::to_string(index);
  r.settings.seed = 1;
  r.settings.cases = cases;
  r.settings.shard = index;
  r.settings.shards = shards;
  r.settings.shard_source = "--shard";
  r.agreed = {{"seed", 1}, {"cases", cases}, {"targets", {"t"}}};
  TargetRun t;
  t.target = "t";
  t.cases = ran;
  t.verdicts = {{"pass", ran - static_cast<int64_t>(findings.size()) - duplicates},
                {"unsound-rewrite", static_cast<int64_t>(findings.size()) + duplicates}};
  t.guard_rules = {{"accept", ran}};
  t.variants["plain"].cases = ran;
  t.findings = std::move(findings);
  t.duplicates = duplicates;
  t.seconds = 1.5;
  r.runs = {t};
  r.held[index]["t"] = next_iteration_after(index, shards, ran);
  r.has_stats = true;
  r.stats["t"].cases = ran;
  r.stats["t"].coverage.dtypes["f32"] = ran;
  return r;
}

std::string text(const RunRecord& r) {
  CampaignStats stats([](const Case&) { return std::vector<std::string>{}; });
  for (const auto& [name, t] : r.stats) stats.merge(name, t);
  return run_summary(r.settings, r.runs, true, &stats).dump(1);
}

std::string error_of(const std::vector<RunRecord>& inputs) {
  try {
    merge_runs(inputs);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// 12 cases in 3 shards: 4 each. Signature "a" in every shard, smallest in
// shard 2; "b" only in shard 1.
std::vector<RunRecord> three_shards() {
  return {shard(0, 3, 4, {finding("a", 3, 5)}, 1), shard(1, 3, 4, {finding("b", 1, 2), finding("a", 4, 3)}, 0),
          shard(2, 3, 4, {finding("a", 8, 3)}, 2)};
}

TEST(RunMerge, SumsCountsAndKeepsTheSmallestCaseOfEachSignature) {
  std::vector<RunRecord> s = three_shards();
  RunRecord m = merge_runs(s);
  ASSERT_EQ(m.runs.size(), 1u);
  const TargetRun& t = m.runs[0];
  EXPECT_EQ(t.cases, 12);
  EXPECT_EQ(t.verdicts.at("unsound-rewrite"), 7);
  EXPECT_EQ(t.verdicts.at("pass"), 5);
  EXPECT_EQ(t.guard_rules.at("accept"), 12);
  EXPECT_EQ(t.variants.at("plain").cases, 12);
  EXPECT_DOUBLE_EQ(t.seconds, 4.5);
  ASSERT_EQ(t.findings.size(), 2u);
  // In iteration order; of "a" the smallest (Lq 3), of those the earliest.
  EXPECT_EQ(t.findings[0].signature, "b");
  EXPECT_EQ(t.findings[1].signature, "a");
  EXPECT_EQ(t.findings[1].iteration, 4);
  // Every failure but the kept findings is a duplicate: 7 - 2.
  EXPECT_EQ(t.duplicates, 5);
  EXPECT_EQ(m.stats.at("t").cases, 12);
  EXPECT_EQ(m.stats.at("t").coverage.dtypes.at("f32"), 12);
  // Every shard to its end: the campaign run whole.
  EXPECT_EQ(m.settings.shards, 1);
  EXPECT_TRUE(m.settings.shard_set.empty());
  EXPECT_EQ(m.settings.shard_source, "");
  EXPECT_EQ(run_summary(m.settings, m.runs, false)["shard"], "0/1");
}

TEST(RunMerge, AssociativeCommutativeAndIdempotent) {
  std::vector<RunRecord> s = three_shards();
  const std::string all = text(merge_runs(s));
  EXPECT_EQ(text(merge_runs({s[2], s[0], s[1]})), all);
  EXPECT_EQ(text(merge_runs({merge_runs({s[0], s[1]}), s[2]})), all);
  EXPECT_EQ(text(merge_runs({s[0], merge_runs({s[2], s[1]})})), all);
  EXPECT_EQ(text(merge_runs({s[0], s[1], s[2], s[1], s[0]})), all);
  EXPECT_EQ(text(merge_runs({merge_runs(s), s[1], merge_runs({s[0], s[2]})})), all);
  EXPECT_EQ(text(merge_runs({s[1], s[1]})), text(s[1]));
}

TEST(RunMerge, APartialMergeNamesItsShards) {
  std::vector<RunRecord> s = three_shards();
  RunRecord m = merge_runs({s[2], s[0]});
  EXPECT_EQ(m.settings.shards, 3);
  EXPECT_EQ(m.settings.shard_set, (std::vector<int>{0, 2}));
  EXPECT_EQ(run_summary(m.settings, m.runs, false)["shards"], nlohmann::json({"0/3", "2/3"}));
  EXPECT_EQ(run_summary(m.settings, m.runs, false).count("shard"), 0u);
}

TEST(RunMerge, ShardsThatStoppedEarlyAreNotTheWholeCampaign) {
  std::vector<RunRecord> s = three_shards();
  s[1] = shard(1, 3, 2, {}, 0);  // --time or --stop-after: iterations 1 and 4 only
  RunRecord m = merge_runs(s);
  EXPECT_EQ(m.settings.shards, 3);
  EXPECT_EQ(m.settings.shard_set, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(m.held.at(1).at("t"), 7);
  // The same shard run further holds the shorter one: it counts once.
  RunRecord longer = merge_runs({shard(1, 3, 4, {}, 0), shard(1, 3, 2, {}, 0)});
  EXPECT_EQ(longer.runs[0].cases, 4);
}

TEST(RunMerge, RefusesOtherSettingsAndOverlaps) {
  std::vector<RunRecord> s = three_shards();
  RunRecord other = s[1];
  other.source = "runs/other";
  other.agreed["seed"] = 2;
  EXPECT_EQ(error_of({s[0], other}),
            "runs runs/shard-0 and runs/other are not shards of one campaign: seed is 1 in runs/shard-0 and 2 in "
            "runs/other");
  RunRecord four = shard(1, 4, 3, {}, 0);
  EXPECT_NE(error_of({s[0], four}).find("the shard count is 3 in runs/shard-0 and 4 in runs/shard-1"),
            std::string::npos);
  RunRecord a = merge_runs({s[0], s[1]}), b = merge_runs({s[1], s[2]});
  a.source = "runs/a";
  b.source = "runs/b";
  EXPECT_NE(error_of({a, b}).find("runs runs/a and runs/b both hold iterations of shard 1/3"), std::string::npos);
  EXPECT_NE(error_of({}).find("no run folder"), std::string::npos);
}

TEST(RunMerge, CaseElementsCountEveryTensorAtEveryRuntimeSize) {
  Case c = sized(3, 5);  // q 3x2, k 5x2, v 5x2
  EXPECT_EQ(case_elements(c), 6 + 10 + 10);
  c.q_heads = c.kv_heads = 2;
  EXPECT_EQ(case_elements(c), 2 * (6 + 10 + 10));
}

}  // namespace
}  // namespace sdpa
