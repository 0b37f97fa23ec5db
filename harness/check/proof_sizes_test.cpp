// The completeness proof's sizes: from the case's symbols and lengths
// alone, inside the symbols' ranges and the size limits, deterministic.
#include "harness/check/proof_sizes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace sdpa {
namespace {

// Lq 2 and Lkv = s0 in [lo, hi], run at s0 = 2: the shape behind the
// dynamic-length class of missed rewrites.
Case dynamic_kv(int64_t lo, int64_t hi, std::optional<int64_t> hint = 2) {
  Case c;
  c.q_len = 2;
  c.kv_len = SymExpr::symbol("s0");
  c.symbols = {{"s0", {hint, lo, hi}}};
  c.runtime = {{{"s0", 2}}};
  c.head_dim = c.value_dim = 4;
  return c;
}

std::vector<int64_t> values_of(const std::vector<ProofSize>& sizes, const std::string& s) {
  std::vector<int64_t> out;
  for (const auto& p : sizes) out.push_back(p.at.at(s));
  return out;
}

const ProofSize* with_value(const std::vector<ProofSize>& sizes, const std::string& s, int64_t v) {
  for (const auto& p : sizes)
    if (p.at.at(s) == v) return &p;
  return nullptr;
}

TEST(ProofSizes, ACaseWithoutSymbolsHasNone) {
  Case c;
  EXPECT_TRUE(proof_sizes(c).empty());
}

TEST(ProofSizes, MinMaxHintAndTheLengthsBoundariesButNotTheRuntimeEntry) {
  const std::vector<ProofSize> sizes = proof_sizes(dynamic_kv(1, 128));
  const std::vector<int64_t> v = values_of(sizes, "s0");
  EXPECT_EQ(std::count(v.begin(), v.end(), 2), 0) << "the runtime entry is checked already";
  ASSERT_NE(with_value(sizes, "s0", 1), nullptr);    // the min; Lkv = Lq - 1
  ASSERT_NE(with_value(sizes, "s0", 3), nullptr);    // one above the hint; Lkv = Lq + 1
  ASSERT_NE(with_value(sizes, "s0", 128), nullptr);  // the max
  EXPECT_EQ(with_value(sizes, "s0", 1)->why, "the min of s0");
  EXPECT_EQ(with_value(sizes, "s0", 128)->why, "the max of s0");
  EXPECT_EQ(with_value(sizes, "s0", 3)->why, "one above the hint of s0");
  // Cheapest first: the max is tried last.
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end())) << ::testing::PrintToString(v);
}

TEST(ProofSizes, TheLengthsBoundariesOfAnUnbackedSymbol) {
  // No hint: the boundaries come from Lq = 2 alone, and 0 is in range.
  const std::vector<ProofSize> sizes = proof_sizes(dynamic_kv(0, 9, std::nullopt));
  EXPECT_EQ(with_value(sizes, "s0", 0)->why, "the min of s0");
  EXPECT_EQ(with_value(sizes, "s0", 1)->why, "Lkv = 1");
  EXPECT_EQ(with_value(sizes, "s0", 3)->why, "Lq = Lkv - 1");
  for (const auto& p : sizes) EXPECT_EQ(p.why.find("hint"), std::string::npos) << p.why;
}

TEST(ProofSizes, EverySizeIsInTheSymbolsRanges) {
  Case c;
  c.q_len = SymExpr::symbol("s0");
  c.kv_len = SymExpr::symbol("s1") + SymExpr(1);
  c.batch = {SymExpr::symbol("s2")};
  c.symbols = {{"s0", {4, 3, 6}}, {"s1", {4, 2, 9}}, {"s2", {2, 1, 3}}};
  c.runtime = {{{"s0", 4}, {"s1", 4}, {"s2", 2}}};
  const std::vector<ProofSize> sizes = proof_sizes(c);
  ASSERT_FALSE(sizes.empty());
  for (const auto& p : sizes)
    for (const auto& [s, info] : c.symbols) {
      EXPECT_GE(p.at.at(s), info.min) << p.why;
      EXPECT_LE(p.at.at(s), info.max) << p.why;
    }
  // Lq = Lkv + 1 at s1 = 4 needs s0 = 6; Lq = Lkv - 1 needs s0 = 4 (the runtime entry).
  bool above = false;
  for (const auto& p : sizes) above = above || (p.at.at("s0") == 6 && p.at.at("s1") == 4);
  EXPECT_TRUE(above);
  bool corner = false;
  for (const auto& p : sizes) corner = corner || p.why == "every symbol at its min";
  EXPECT_TRUE(corner);
}

TEST(ProofSizes, AMaxPastTheLimitIsTriedAtTheLargestValueThatFits) {
  // Lq = Lkv = s0 up to 4096: 4096^2 scores break the proof's limit (2^18),
  // so the max is tried at 512, the largest square within it.
  Case c;
  c.q_len = c.kv_len = SymExpr::symbol("s0");
  c.symbols = {{"s0", {8, 1, 4096}}};
  c.runtime = {{{"s0", 8}}};
  const std::vector<ProofSize> sizes = proof_sizes(c);
  const ProofSize* largest = with_value(sizes, "s0", 512);
  ASSERT_NE(largest, nullptr);
  EXPECT_EQ(largest->why, "the largest s0 the proof's size limit allows; its max is 4096");
  for (const auto& p : sizes) EXPECT_LE(p.at.at("s0"), 512);
  ProofLimits tight;
  tight.max_elements = 100;
  for (const auto& p : proof_sizes(c, {}, tight)) EXPECT_LE(p.at.at("s0"), 10) << p.why;
}

TEST(ProofSizes, SizesThatMakeAnInvalidCaseAreLeftOut) {
  // A [s0, s1] mask over [Lq, Lkv] = [2, s1]: s0 must be 1 or 2 to broadcast.
  Case c = dynamic_kv(1, 6);
  c.kv_len = SymExpr::symbol("s1");
  c.symbols = {{"s0", {2, 1, 5}}, {"s1", {2, 1, 6}}};
  c.runtime = {{{"s0", 2}, {"s1", 2}}};
  c.mask = MaskSpec{DType::b8, {SymExpr::symbol("s0"), SymExpr::symbol("s1")}};
  for (const auto& p : proof_sizes(c)) EXPECT_LE(p.at.at("s0"), 2) << p.why;
}

TEST(ProofSizes, DeterministicAndCapped) {
  Case c;
  c.q_len = SymExpr::symbol("s0");
  c.kv_len = SymExpr::symbol("s1");
  c.batch = {SymExpr::symbol("s2"), SymExpr::symbol("s3")};
  c.symbols = {{"s0", {5, 1, 64}}, {"s1", {7, 1, 64}}, {"s2", {2, 1, 4}}, {"s3", {3, 1, 4}}};
  c.runtime = {{{"s0", 5}, {"s1", 7}, {"s2", 2}, {"s3", 3}}};
  const std::vector<ProofSize> a = proof_sizes(c), b = proof_sizes(c);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].at, b[i].at);
  ProofLimits all, ten;
  all.max_sizes = 1000;
  ten.max_sizes = 10;
  const std::vector<ProofSize> every = proof_sizes(c, {}, all), capped = proof_sizes(c, {}, ten);
  ASSERT_GT(every.size(), 10u);
  ASSERT_EQ(capped.size(), 10u);
  for (size_t i = 0; i < capped.size(); ++i) EXPECT_EQ(capped[i].at, every[i].at) << "the cheapest are kept";
}

TEST(ProofSizes, TheSecondDrawIsAnotherSeedOfFiniteUnsaturatedNormalData) {
  Case c = dynamic_kv(1, 8);
  c.data.seed = 11;
  c.data.distribution = Distribution::integers;
  c.data.magnitude = 3;
  c.data.special = SpecialData{SpecialValue::nan, "k"};
  const Case d = second_draw(c);
  EXPECT_NE(d.data.seed, c.data.seed);
  EXPECT_EQ(d.data.seed, second_draw(c).data.seed);
  EXPECT_EQ(d.data.distribution, Distribution::normal);
  EXPECT_FALSE(d.data.special);
  EXPECT_EQ(d.data.magnitude, 1.0) << "the default scale 1/sqrt(E): scores of order 1 at magnitude 1";
  EXPECT_EQ(d.kv_len, c.kv_len);
  EXPECT_EQ(d.runtime, c.runtime);
  c.data.distribution = Distribution::large;
  EXPECT_EQ(second_draw(c).data.distribution, Distribution::normal);
  c.scale = 100;  // E 4: q.k * scale spreads as m^2 * 200
  EXPECT_NEAR(second_draw(c).data.magnitude, 1 / std::sqrt(200.0), 1e-15);
  c.scale = 1e6;
  EXPECT_EQ(second_draw(c).data.magnitude, 1.0 / 64);
  c.scale = 0.0;
  EXPECT_EQ(second_draw(c).data.magnitude, 1.0);
  c.scale = 1e-12;
  EXPECT_EQ(second_draw(c).data.magnitude, 64.0);
}

TEST(ProofSizes, SizesInWords) {
  EXPECT_EQ(sizes_str({}), "static sizes");
  EXPECT_EQ(sizes_str({{"s0", 3}, {"s1", 4}}), "s0 = 3, s1 = 4");
}

}  // namespace
}  // namespace sdpa
