#include "reports/campaign_stats.h"

#include <gtest/gtest.h>

#include "harness/io/json_reader.h"
#include "harness/isolate/result_codec.h"

namespace sdpa {
namespace {

Case lengths(int64_t lq, int64_t lkv) {
  Case c;
  c.q_len = lq;
  c.kv_len = lkv;
  return c;
}

Decision decided(const std::string& rule) {
  Decision d;
  d.node = "%scaled_dot_product_attention";
  d.rewrite = rule == "accept";
  d.deciding_rule = rule;
  d.rules = {{rule, d.rewrite, "what the rule compared"}};
  return d;
}

CampaignStats stats_with(std::vector<std::string> classes) {
  return CampaignStats([classes](const Case&) { return classes; });
}

TEST(RatioBuckets, DecadesWithTheBoundOnTheLeftOfTheLine) {
  EXPECT_EQ(ratio_bucket(0.0), 0);
  EXPECT_EQ(ratio_bucket(1e-6), 0);
  EXPECT_EQ(ratio_bucket(2e-6), 1);
  EXPECT_EQ(ratio_bucket(0.5), kRatioFirstFailing - 1);
  EXPECT_EQ(ratio_bucket(1.0), kRatioFirstFailing - 1);  // exactly at the bound: within
  EXPECT_EQ(ratio_bucket(1.0000001), kRatioFirstFailing);
  EXPECT_EQ(ratio_bucket(10.0), kRatioFirstFailing);
  EXPECT_EQ(ratio_bucket(1000.0), kRatioBuckets - 2);
  EXPECT_EQ(ratio_bucket(1e9), kRatioBuckets - 1);
  EXPECT_EQ(ratio_bucket(INFINITY), kRatioBuckets - 1);
  for (int e = -5; e <= 3; ++e) {  // every power of ten is the top of its bucket
    double edge = std::pow(10.0, e);
    EXPECT_EQ(ratio_bucket(edge) + 1, ratio_bucket(edge * 1.001)) << edge;
  }
  EXPECT_EQ(ratio_edge_label(0), "1e-6");
  EXPECT_EQ(ratio_edge_label(kRatioFirstFailing - 1), "1e0");
}

TEST(LengthBuckets, Log2) {
  EXPECT_EQ(length_bucket(0), -1);
  EXPECT_EQ(length_bucket(1), 0);
  EXPECT_EQ(length_bucket(3), 1);
  EXPECT_EQ(length_bucket(4), 2);
  EXPECT_EQ(length_bucket(513), 9);
  EXPECT_EQ(length_bucket_label(-1), "0");
  EXPECT_EQ(length_bucket_label(0), "1");
  EXPECT_EQ(length_bucket_label(2), "4-7");
}

TEST(Coverage, HeadLayoutsAndMaskKinds) {
  Case c;
  c.q_heads = c.kv_heads = 4;
  EXPECT_EQ(head_layout(c), "MHA");
  c.kv_heads = 2;
  EXPECT_EQ(head_layout(c), "GQA");
  c.kv_heads = 1;
  EXPECT_EQ(head_layout(c), "MQA");
  c.q_heads = 1;
  EXPECT_EQ(head_layout(c), "MHA");
  EXPECT_EQ(mask_kinds(c), std::vector<std::string>{"none"});
  c.is_causal = true;
  EXPECT_EQ(mask_kinds(c), std::vector<std::string>{"causal"});
  c.mask = MaskSpec{};
  c.mask->dtype = DType::f16;
  EXPECT_EQ(mask_kinds(c), (std::vector<std::string>{"causal", "additive"}));
  c.is_causal = false;
  c.mask->dtype = DType::b8;
  EXPECT_EQ(mask_kinds(c), std::vector<std::string>{"bool"});
}

TEST(Coverage, DataKindsNameSpecialValuesAndEmptyDims) {
  Case c;
  EXPECT_EQ(data_kinds(c), std::vector<std::string>{"finite"});
  c.data.special = SpecialData{SpecialValue::pos_inf, "v", SpecialPlace::row, 1};
  EXPECT_EQ(data_kinds(c), std::vector<std::string>{"+inf"});
  c.q_len = 0;
  EXPECT_EQ(data_kinds(c), (std::vector<std::string>{"empty", "+inf"}));
  c.data.special.reset();
  c.q_len = 1;
  c.batch = {SymExpr(0)};
  EXPECT_EQ(data_kinds(c), std::vector<std::string>{"empty"});
  CampaignStats stats = stats_with({});
  stats.add("aten", c, CaseResult{});
  stats.add("aten", Case{}, CaseResult{});
  EXPECT_EQ(stats.targets().at("aten").coverage.data.at("empty"), 1);
  EXPECT_EQ(stats.targets().at("aten").coverage.data.at("finite"), 1);
}

TEST(CampaignStats, LsbBucketsAreOctavesWithTheUpperEdgeIncluded) {
  EXPECT_EQ(lsb_bucket(0.0), 0);
  EXPECT_EQ(lsb_bucket(0.5), 0);
  EXPECT_EQ(lsb_bucket(0.51), 1);
  EXPECT_EQ(lsb_bucket(1.0), 1);
  EXPECT_EQ(lsb_bucket(1.5), 2);
  EXPECT_EQ(lsb_bucket(64.0), kLsbBuckets - 2);
  EXPECT_EQ(lsb_bucket(65.0), kLsbBuckets - 1);
  EXPECT_EQ(lsb_edge_label(0), "0.5");
  EXPECT_EQ(lsb_edge_label(1), "1");
  EXPECT_EQ(lsb_edge_label(kLsbBuckets - 2), "64");
}

TEST(CampaignStats, CountsTheErrorInOutputLsbOnlyForInt8Outputs) {
  CampaignStats stats = stats_with({});
  CaseResult r;
  r.accuracy = {{"cmsis-nn", DType::f32, 0.1, 0.1, 0.75}, {"cmsis-nn", DType::f32, 0.1, 0.1, 3.0},
                {"portable", DType::f32, 0.1}};
  stats.add("cortex-m", lengths(1, 1), r);
  const auto& lsb = stats.targets().at("cortex-m").lsb;
  ASSERT_EQ(lsb.size(), 1u);
  const auto& counts = lsb.at({"f32", "cmsis-nn"});
  EXPECT_EQ(counts[lsb_bucket(0.75)], 1);
  EXPECT_EQ(counts[lsb_bucket(3.0)], 1);
}

TEST(CampaignStats, CountsVerdictsRatiosAndCoveragePerTarget) {
  CampaignStats stats = stats_with({});
  CaseResult pass, unsound;
  pass.accuracy = {{"libtorch", DType::f32, 0.01}, {"portable", DType::f32, 3.0}};
  unsound.verdict = Verdict::unsound_rewrite;
  Case bf16 = lengths(5, 9);
  bf16.dtype = DType::bf16;
  stats.add("aten", lengths(1, 1), pass);
  stats.add("aten", lengths(2, 3), pass);
  stats.add("aten", bf16, unsound);
  stats.add("llm", lengths(1, 1), pass);
  const TargetStats& aten = stats.targets().at("aten");
  EXPECT_EQ(aten.cases, 3);
  EXPECT_EQ(aten.verdicts.at("pass"), 2);
  EXPECT_EQ(aten.verdicts.at("unsound-rewrite"), 1);
  const auto& libtorch = aten.ratios.at({"f32", "libtorch"});
  ASSERT_EQ(libtorch.size(), static_cast<size_t>(kRatioBuckets));
  EXPECT_EQ(libtorch[ratio_bucket(0.01)], 2);
  EXPECT_EQ(aten.ratios.at({"f32", "portable"})[kRatioFirstFailing], 2);
  EXPECT_EQ(aten.ratios.size(), 2u);
  EXPECT_EQ(aten.coverage.lengths.at({0, 0}), 1);
  EXPECT_EQ(aten.coverage.lengths.at({1, 1}), 1);
  EXPECT_EQ(aten.coverage.lengths.at({2, 3}), 1);
  EXPECT_EQ(aten.coverage.dtypes.at("f32"), 2);
  EXPECT_EQ(aten.coverage.dtypes.at("bf16"), 1);
  EXPECT_EQ(aten.coverage.head_layouts.at("MHA"), 3);
  EXPECT_EQ(aten.coverage.mask_kinds.at("none"), 3);
  EXPECT_EQ(stats.targets().at("llm").cases, 1);
}

TEST(CampaignStats, LengthsAtTheFirstRuntimeSize) {
  Case c;
  c.symbols["s0"] = SymbolInfo{};
  c.q_len = SymExpr::symbol("s0");
  c.kv_len = SymExpr::symbol("s0");
  c.runtime = {{{"s0", 40}}, {{"s0", 2}}};
  CampaignStats stats = stats_with({});
  stats.add("llm", c, CaseResult{});
  EXPECT_EQ(stats.targets().at("llm").coverage.lengths.begin()->first, std::make_pair(5, 5));
}

TEST(CampaignStats, GuardDecisionsByClassAndDecidingRule) {
  CampaignStats stats = stats_with({"Lq=1", "mask:bool"});
  CaseResult accepted, kept, refused;
  accepted.decisions = {decided("accept")};
  kept.decisions = {decided("mask-shape")};
  stats.add("llm", lengths(1, 4), accepted);
  stats.add("llm", lengths(1, 4), kept);
  stats.add("llm", lengths(1, 4), kept);
  stats.add("llm", lengths(1, 4), refused);  // no decision: nothing counted
  const auto& guard = stats.targets().at("llm").guard;
  ASSERT_EQ(guard.size(), 2u);
  for (const char* cls : {"Lq=1", "mask:bool"}) {
    EXPECT_EQ(guard.at(cls).at("accept"), 1);
    EXPECT_EQ(guard.at(cls).at("mask-shape"), 2);
  }
}

TEST(Coverage, EveryClassOfEveryCaseIsCountedWithOrWithoutDecisions) {
  CampaignStats stats = stats_with({"mask:block-sparse", "empty-tile:block-sparse:1025"});
  CaseResult kept;
  kept.decisions = {decided("mask-shape")};
  stats.add("aten", lengths(1, 1025), CaseResult{});
  stats.add("aten", lengths(1, 1025), kept);
  const Coverage& c = stats.targets().at("aten").coverage;
  EXPECT_EQ(c.classes.at("mask:block-sparse"), 2);
  EXPECT_EQ(c.classes.at("empty-tile:block-sparse:1025"), 2);
  const nlohmann::json j = stats.to_json().at("aten").at("coverage").at("classes");
  EXPECT_EQ(j.at("empty-tile:block-sparse:1025"), 2);
  // Statistics written before the field read as no classes.
  nlohmann::json old = stats.to_json().at("aten");
  old["coverage"].erase("classes");
  EXPECT_TRUE(target_stats_from_json(old, "old run.json").coverage.classes.empty());
}

TEST(CampaignStats, CollectorFeedsItsTarget) {
  CampaignStats stats = stats_with({});
  auto hook = stats.collector("aten");
  hook(lengths(1, 1), CaseResult{});
  hook(lengths(1, 1), CaseResult{});
  EXPECT_EQ(stats.targets().at("aten").cases, 2);
  EXPECT_EQ(stats.targets().count("llm"), 0u);
}

// Cases from..to-1 of a small varied campaign: lengths, dtypes, heads,
// masks, decisions and accuracy samples all change with k.
struct Sample {
  std::string target;
  Case c;
  CaseResult r;
};
std::vector<Sample> varied_cases(int from, int to) {
  std::vector<Sample> out;
  for (int k = from; k < to; ++k) {
    Case c = lengths(1 + k % 7, 1 + (k * 5) % 11);
    c.dtype = k % 3 == 0 ? DType::bf16 : DType::f32;
    c.q_heads = 4;
    c.kv_heads = k % 4 == 0 ? 1 : 4;
    c.is_causal = k % 5 == 0;
    CaseResult r;
    r.verdict = k % 6 == 0 ? Verdict::unsound_rewrite : Verdict::pass;
    r.accuracy = {{"libtorch", c.dtype, std::pow(10.0, k % 9 - 6)}};
    if (k % 2) r.accuracy.push_back({"cmsis-nn", DType::f32, 0.5, 0.5, static_cast<double>(k % 40)});
    r.decisions = {decided(k % 3 ? "accept" : "mask-shape")};
    out.push_back({k % 2 ? "aten" : "llm", c, r});
  }
  return out;
}

void add_cases(CampaignStats& stats, int from, int to) {
  for (const auto& s : varied_cases(from, to)) stats.add(s.target, s.c, s.r);
}

// What a worker sends for a case the command only counts (the summary's
// bytes, the counted result) counts as the case and its whole result do.
TEST(CampaignStats, SummaryHooksCountAsTheCasesDo) {
  const CaseClassifier classify = [](const Case& c) {
    return std::vector<std::string>{c.is_causal ? "causal" : "not-causal", "symbols:independent"};
  };
  CampaignStats direct(classify), hooked(classify);
  auto summarize = hooked.summarizer();
  std::map<std::string, std::function<void(const std::string&, const CaseResult&)>> collect;
  for (const char* t : {"aten", "llm"}) collect[t] = hooked.summary_collector(t);
  for (const auto& s : varied_cases(0, 40)) {
    direct.add(s.target, s.c, s.r);
    collect.at(s.target)(summarize(s.c), counted_result_from_bytes(counted_result_to_bytes(s.r)));
  }
  EXPECT_EQ(hooked.to_json(), direct.to_json());
  EXPECT_EQ(direct.targets().at("aten").coverage.classes.at("symbols:independent"), 20);
  EXPECT_THROW(collect.at("aten")("not a summary", CaseResult{}), std::runtime_error);
}

TEST(CampaignStats, JsonRoundTripIsExact) {
  CampaignStats stats = stats_with({"Lq=1"});
  add_cases(stats, 0, 40);
  CampaignStats back = stats_with({});
  const nlohmann::json j = stats.to_json();
  for (const auto& [name, t] : j.items()) back.merge(name, target_stats_from_json(t, "stats"));
  EXPECT_EQ(back.to_json(), stats.to_json());
  EXPECT_EQ(back.targets().at("aten").coverage.lengths, stats.targets().at("aten").coverage.lengths);
  EXPECT_EQ(back.targets().at("aten").lsb, stats.targets().at("aten").lsb);
}

TEST(CampaignStats, StatisticsOfTwoHalvesSumToTheWhole) {
  CampaignStats whole = stats_with({"Lq=1", "gqa"}), first = stats_with({"Lq=1", "gqa"}),
                second = stats_with({"Lq=1", "gqa"});
  add_cases(whole, 0, 50);
  add_cases(first, 0, 17);
  add_cases(second, 17, 50);
  CampaignStats sum = stats_with({});
  for (const CampaignStats* part : {&second, &first})
    for (const auto& [name, t] : part->targets()) sum.merge(name, t);
  EXPECT_EQ(sum.to_json(), whole.to_json());
  EXPECT_NE(first.to_json(), whole.to_json());
}

TEST(CampaignStats, BadStatisticsNameTheirSource) {
  try {
    target_stats_from_json({{"cases", "many"}}, "RUN/checkpoint.json: stats of aten");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("RUN/checkpoint.json: stats of aten: not campaign statistics"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace sdpa
