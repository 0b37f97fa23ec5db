#include "harness/case/case_json.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness/case/case_validate.h"
#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

// The example of CORPUS_FORMAT.md.
nlohmann::json example_case() {
  return nlohmann::json::parse(R"({
    "dtype": "f32", "layout": "bhsd", "batch": [1], "q_heads": 4, "kv_heads": 2,
    "q_len": 3, "kv_len": "s0", "head_dim": 8, "value_dim": 8, "enable_gqa": true,
    "is_causal": false, "dropout_p": 0.0, "scale": null, "start_pos": 0, "mask": null,
    "symbols": { "s0": { "hint": 5, "min": 2, "max": 64 } },
    "runtime": [ { "s0": 5 }, { "s0": 3 } ],
    "data": { "seed": 42, "distribution": "normal", "magnitude": 1.0 } })");
}

std::string error_of(const nlohmann::json& j) {
  try {
    Case c = case_from_json(j);
    validate_case(c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(CaseJson, ReadsTheFormatExampleAndRoundTrips) {
  Case c = case_from_json(example_case());
  validate_case(c);
  EXPECT_EQ(c.q_heads, 4);
  EXPECT_EQ(c.kv_len, SymExpr::symbol("s0"));
  EXPECT_EQ(c.symbols.at("s0").hint, 5);
  EXPECT_EQ(c.runtime.size(), 2u);
  EXPECT_EQ(case_to_json(case_from_json(case_to_json(c))), case_to_json(c));
}

TEST(CaseJson, MaskRoundTrips) {
  nlohmann::json j = example_case();
  j["mask"] = {{"dtype", "bool"}, {"shape", {"3", "s0"}}, {"pattern", "window"}, {"param", 2}, {"fill", "-inf"}};
  j["mask"]["shape"] = {3, "s0"};
  Case c = case_from_json(j);
  validate_case(c);
  ASSERT_TRUE(c.mask);
  EXPECT_EQ(c.mask->pattern, MaskPattern::window);
  EXPECT_EQ(case_to_json(case_from_json(case_to_json(c))), case_to_json(c));
}

TEST(CaseJson, ServingMasksRoundTripWithTheirBlocks) {
  nlohmann::json j = example_case();
  j["batch"] = {2};
  j["mask"] = {{"dtype", "bool"}, {"shape", {2, 1, 1, "s0"}}, {"pattern", "per-batch-padding"},
               {"param", 3}, {"fill", "-inf"}};
  Case c = case_from_json(j);
  validate_case(c);
  EXPECT_EQ(c.mask->pattern, MaskPattern::per_batch_padding);
  EXPECT_EQ(c.mask->param, 3);
  EXPECT_EQ(case_to_json(case_from_json(case_to_json(c))), case_to_json(c));
  EXPECT_FALSE(case_to_json(c)["mask"].contains("block_rows"));
  j["mask"]["pattern"] = "left-padding";
  EXPECT_EQ(case_from_json(j).mask->pattern, MaskPattern::left_padding);
  j["mask"]["pattern"] = "block-sparse";
  j["mask"]["param"] = 0.5;
  j["mask"]["block_rows"] = 32;
  j["mask"]["block_keys"] = 512;
  c = case_from_json(j);
  validate_case(c);
  EXPECT_EQ(c.mask->block_rows, 32);
  EXPECT_EQ(c.mask->block_keys, 512);
  EXPECT_EQ(case_to_json(c)["mask"]["block_keys"], 512);
  EXPECT_EQ(case_to_json(case_from_json(case_to_json(c))), case_to_json(c));
}

TEST(CaseJson, ServingMaskFieldsAreCheckedAndNamed) {
  nlohmann::json j = example_case();
  j["mask"] = {{"dtype", "bool"}, {"shape", {3, "s0"}}, {"pattern", "block-sparse"}, {"param", 0.5},
               {"fill", "-inf"}, {"block_rows", 1}};
  EXPECT_NE(error_of(j).find("case.mask.block_keys"), std::string::npos) << error_of(j);
  j["mask"]["block_keys"] = 0;
  EXPECT_NE(error_of(j).find("case.mask.block_keys: expected a positive integer, got 0"), std::string::npos)
      << error_of(j);
  j["mask"]["block_keys"] = 64;
  j["mask"]["param"] = 2;
  EXPECT_NE(error_of(j).find("case.mask.param: the keep probability must be in [0, 1]"), std::string::npos);
  j["mask"]["pattern"] = "left-padding";
  EXPECT_NE(error_of(j).find("case.mask.block_rows: only a block-sparse mask has blocks"), std::string::npos)
      << error_of(j);
  j["mask"].erase("block_rows");
  j["mask"].erase("block_keys");
  j["mask"]["param"] = 1.5;
  EXPECT_NE(error_of(j).find("case.mask.param: the number of dropped leading keys must be an integer"),
            std::string::npos) << error_of(j);
  j["mask"]["pattern"] = "per-batch-padding";
  j["mask"]["param"] = -1;
  EXPECT_NE(error_of(j).find("case.mask.param: the most padded keys of a batch element must be an integer"),
            std::string::npos) << error_of(j);
  j["mask"]["pattern"] = "striped";
  EXPECT_NE(error_of(j).find("left-padding, per-batch-padding, block-sparse"), std::string::npos) << error_of(j);
}

// Files written before the serving patterns existed read as they did and
// are written back with the same mask fields and values (a hand-written
// integer param 2 reads back as 2.0): every mask of the corpus.
TEST(CaseJson, OlderCorpusMasksWriteBackUnchanged) {
  const char* root = std::getenv("SDPACHECK_SOURCE_DIR");
  ASSERT_NE(root, nullptr);
  int masks = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(root) + "/corpus")) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const nlohmann::json file = nlohmann::json::parse(in);
    const nlohmann::json& mask = file.at("case").at("mask");
    if (mask.is_null()) continue;
    ++masks;
    const Case c = case_from_json(file.at("case"));
    EXPECT_EQ(case_to_json(c)["mask"], mask) << entry.path();
  }
  EXPECT_GT(masks, 20);
}

TEST(CaseJson, SpecialDataRoundTripsAndBadFieldsAreNamed) {
  nlohmann::json j = example_case();
  j["data"]["special"] = {{"value", "-inf"}, {"tensor", "v"}, {"place", "row"}, {"count", 2}};
  Case c = case_from_json(j);
  validate_case(c);
  ASSERT_TRUE(c.data.special);
  EXPECT_EQ(c.data.special->value, SpecialValue::neg_inf);
  EXPECT_EQ(c.data.special->place, SpecialPlace::row);
  EXPECT_EQ(case_to_json(case_from_json(case_to_json(c))), case_to_json(c));
  EXPECT_FALSE(case_to_json(case_from_json(example_case()))["data"].contains("special"));
  j["data"]["special"]["value"] = "NaN";
  EXPECT_NE(error_of(j).find("case.data.special.value: expected one of nan, +inf, -inf, overflow, huge"),
            std::string::npos);
  j["data"]["special"]["value"] = "nan";
  j["data"]["special"]["tensor"] = "mask";
  EXPECT_NE(error_of(j).find("case.data.special.tensor: \"mask\" needs an additive (float) mask"),
            std::string::npos);
  j["data"]["special"]["tensor"] = "out";
  EXPECT_NE(error_of(j).find("case.data.special.tensor: expected one of q, k, v, mask"), std::string::npos);
  j["data"]["special"]["tensor"] = "q";
  j["data"]["special"]["count"] = 0;
  EXPECT_NE(error_of(j).find("case.data.special.count: expected an integer in [1, 64]"), std::string::npos);
}

TEST(CaseJson, UnknownFieldIsAnErrorNamingIt) {
  nlohmann::json j = example_case();
  j["q_head"] = 4;
  EXPECT_EQ(error_of(j), "case.q_head: unknown field");
  j = example_case();
  j["data"]["sed"] = 1;
  EXPECT_EQ(error_of(j), "case.data.sed: unknown field");
}

TEST(CaseJson, WrongTypeNamesFieldAndExpectation) {
  nlohmann::json j = example_case();
  j["q_heads"] = "four";
  EXPECT_EQ(error_of(j), "case.q_heads: expected an integer, got a string");
  j = example_case();
  j["dtype"] = "float";
  EXPECT_NE(error_of(j).find("case.dtype: expected one of f32, f16, bf16, f64, int8"), std::string::npos);
  j = example_case();
  j.erase("head_dim");
  EXPECT_EQ(error_of(j), "case.head_dim: missing required field");
}

TEST(CaseValidate, HeadsThatDoNotDivide) {
  nlohmann::json j = example_case();
  j["kv_heads"] = 3;
  EXPECT_NE(error_of(j).find("case.kv_heads: with enable_gqa"), std::string::npos);
  j["enable_gqa"] = false;
  EXPECT_NE(error_of(j).find("case.kv_heads: without enable_gqa"), std::string::npos);
  j["kv_heads"] = 1;  // a single kv head broadcasts
  EXPECT_EQ(error_of(j), "");
}

TEST(CaseValidate, MaskShapeMustBroadcast) {
  nlohmann::json j = example_case();
  j["mask"] = {{"dtype", "bool"}, {"shape", {4, 5}}, {"pattern", "keep-all"}};
  EXPECT_NE(error_of(j).find("case.mask.shape[0]"), std::string::npos);
  j["mask"]["shape"] = {1, 3, "s0"};
  EXPECT_EQ(error_of(j), "");
  j["mask"]["shape"] = {1, 3, 5};  // 5 != s0 = 3 at runtime[1]
  EXPECT_NE(error_of(j).find("at runtime[1]"), std::string::npos);
}

TEST(CaseValidate, RuntimeOutsideRangeAndMissingSymbols) {
  nlohmann::json j = example_case();
  j["runtime"][1]["s0"] = 65;
  EXPECT_NE(error_of(j).find("case.runtime[1].s0: value 65 is outside the symbol's range [2, 64]"),
            std::string::npos);
  j = example_case();
  j["runtime"] = nlohmann::json::array();
  EXPECT_NE(error_of(j).find("case.runtime"), std::string::npos);
  j = example_case();
  j["q_len"] = "s9";
  EXPECT_NE(error_of(j).find("case.q_len: symbol 's9' is not declared"), std::string::npos);
}

TEST(CaseJson, AlignmentAndVariantAreOptionalWithDefaults) {
  Case c = case_from_json(example_case());
  EXPECT_EQ(c.causal_alignment, CausalAlignment::top_left);
  EXPECT_TRUE(c.variant.empty());
  // Defaults are not written: a file from before the fields keeps its bytes.
  EXPECT_EQ(case_to_json(c), example_case());
  nlohmann::json j = example_case();
  j["is_causal"] = true;
  j["causal_alignment"] = "bottom-right";
  j["variant"] = "scale-on-q-and-k";
  Case d = case_from_json(j);
  EXPECT_EQ(d.causal_alignment, CausalAlignment::bottom_right);
  EXPECT_EQ(d.variant, "scale-on-q-and-k");
  EXPECT_EQ(case_to_json(d), j);
  EXPECT_TRUE(d.causal_keeps(0, 2, 2, 4) && !d.causal_keeps(0, 3, 2, 4));  // j <= i + Lkv - Lq
  j["causal_alignment"] = "bottom-left";
  EXPECT_NE(error_of(j).find("case.causal_alignment: expected one of top-left, bottom-right"), std::string::npos);
  j["causal_alignment"] = "bottom-right";
  j["is_causal"] = false;
  EXPECT_NE(error_of(j).find("case.causal_alignment: bottom-right"), std::string::npos) << error_of(j);
}

TEST(CaseJson, StartPosAlignmentKeepsKeysUpToStartPosPlusRow) {
  nlohmann::json j = example_case();
  j["is_causal"] = true;
  j["causal_alignment"] = "start-pos";
  Case d = case_from_json(j);
  EXPECT_EQ(d.causal_alignment, CausalAlignment::start_pos);
  EXPECT_EQ(case_to_json(d), j);
  // Lq 2, Lkv 8 at start_pos 3: row 0 keeps 0..3, row 1 keeps 0..4.
  EXPECT_TRUE(d.causal_keeps(0, 3, 2, 8, 3) && !d.causal_keeps(0, 4, 2, 8, 3));
  EXPECT_TRUE(d.causal_keeps(1, 4, 2, 8, 3) && !d.causal_keeps(1, 5, 2, 8, 3));
  EXPECT_TRUE(d.causal_keeps(0, 0, 2, 8, 0) && !d.causal_keeps(0, 1, 2, 8, 0));  // start_pos 0: top-left
  j["is_causal"] = false;
  EXPECT_NE(error_of(j).find("case.causal_alignment: start-pos"), std::string::npos) << error_of(j);
}

TEST(CaseValidate, CallsAtenRejects) {
  nlohmann::json j = example_case();
  j["is_causal"] = true;
  j["mask"] = {{"dtype", "bool"}, {"shape", {3, "s0"}}, {"pattern", "keep-all"}};
  EXPECT_NE(error_of(j).find("is_causal"), std::string::npos);
  j = example_case();
  j["mask"] = {{"dtype", "f16"}, {"shape", {3, "s0"}}, {"pattern", "keep-all"}};
  EXPECT_NE(error_of(j).find("case.mask.dtype"), std::string::npos);
  j = example_case();
  j["dropout_p"] = 1.0;
  EXPECT_NE(error_of(j).find("case.dropout_p"), std::string::npos);
}

TEST(CaseValidate, SizeLimitsBeforeAllocation) {
  nlohmann::json j = example_case();
  j["head_dim"] = 1 << 15;
  j["value_dim"] = 1 << 15;
  j["symbols"]["s0"]["max"] = 60000;
  j["runtime"][0]["s0"] = 60000;
  std::string e = error_of(j);
  EXPECT_NE(e.find("elements, the limit is"), std::string::npos) << e;
  j = example_case();
  j["q_heads"] = 1 << 20;
  EXPECT_NE(error_of(j).find("case.q_heads"), std::string::npos);
  // A batch past int64 in product, each size within the limit: the shape
  // is named, the count not wrapped.
  j = example_case();
  j["batch"] = {65536, 65536, 65536, 65536};
  e = error_of(j);
  EXPECT_NE(e.find("[65536, 65536, 65536, 65536, "), std::string::npos) << e;
  EXPECT_NE(e.find("more than 9e18 elements"), std::string::npos) << e;
  // One batch size past the limit is named by its entry.
  j = example_case();
  j["batch"] = {int64_t{1} << 40, 1};
  EXPECT_EQ(error_of(j), "case.batch[0]: at runtime[0] 1099511627776 exceeds the size limit 65536");
}

TEST(CaseValidate, SizeExpressionsThatOverflowAreErrors) {
  // s0^4 + 1 at 65536 is 2^64 + 1: wrapped, it would be 1 and pass the limits.
  nlohmann::json j = example_case();
  j["kv_len"] = "s0*s0*s0*s0 + 1";
  j["symbols"]["s0"]["max"] = 65536;
  j["runtime"][1]["s0"] = 65536;
  EXPECT_EQ(error_of(j), "case.kv_len: at runtime[1] size 's0*s0*s0*s0 + 1' overflows int64 at s0=65536");
  // At the export hints too.
  j["runtime"][1]["s0"] = 3;
  j["symbols"]["s0"]["hint"] = 65536;
  EXPECT_EQ(error_of(j), "case.kv_len: at the export hints size 's0*s0*s0*s0 + 1' overflows int64 at s0=65536");
  // Below overflow, the size limit catches it.
  j = example_case();
  j["kv_len"] = "s0*s0*s0 + 1";
  j["symbols"]["s0"]["max"] = 65536;
  j["runtime"][1]["s0"] = 65536;
  EXPECT_EQ(error_of(j), "case.kv_len: at runtime[1] 281474976710657 exceeds the size limit 65536");
}

TEST(CaseJson, IntegersOutsideInt64AreErrorsNamingTheField) {
  nlohmann::json j = example_case();
  j["head_dim"] = nlohmann::json::parse("18446744073709551608");
  EXPECT_EQ(error_of(j), "case.head_dim: expected an integer in [-2^63, 2^63), got 18446744073709551608");
  j = example_case();
  j["runtime"][0]["s0"] = nlohmann::json::parse("9223372036854775808");
  EXPECT_EQ(error_of(j), "case.runtime[0].s0: expected an integer in [-2^63, 2^63), got 9223372036854775808");
  j = example_case();
  j["q_len"] = nlohmann::json::parse("1e19");
  EXPECT_NE(error_of(j).find("case.q_len: expected an integer in [-2^63, 2^63)"), std::string::npos);
}

}  // namespace
}  // namespace sdpa
