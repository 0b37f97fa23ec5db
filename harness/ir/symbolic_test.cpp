#include "harness/ir/symbolic.h"

#include <gtest/gtest.h>

#include <climits>
#include <stdexcept>

#include "harness/ir/shape_env.h"

namespace sdpa {
namespace {

TEST(SymExpr, CanonicalFormMakesEqualSizesEqual) {
  SymExpr a = SymExpr::parse("s0 + s1 * 2");
  SymExpr b = SymExpr::parse("2*s1 + s0");
  EXPECT_EQ(a, b);
  EXPECT_EQ((a - b), SymExpr(0));
  EXPECT_TRUE((a - b).is_constant());
  EXPECT_EQ(SymExpr::parse("(s0 + 1) * (s0 - 1)"), SymExpr::parse("s0*s0 - 1"));
}

// Constants inside and outside the shared table, made directly or computed,
// have one form: equal, ordered by value, and 0 with no terms at all.
TEST(SymExpr, ConstantsHaveOneFormWhereverTheyComeFrom) {
  const SymExpr s0 = SymExpr::symbol("s0");
  for (int64_t c : {int64_t{-9}, int64_t{-8}, int64_t{1}, int64_t{1024}, int64_t{1025}, int64_t{1} << 40}) {
    const SymExpr computed = (s0 + SymExpr(c)) - s0;
    EXPECT_EQ(computed, SymExpr(c)) << c;
    EXPECT_EQ(computed.terms(), SymExpr(c).terms()) << c;
    EXPECT_EQ(computed.constant(), c);
    EXPECT_FALSE(computed < SymExpr(c) || SymExpr(c) < computed) << c;
    EXPECT_TRUE((computed - SymExpr(c)).terms().empty()) << c;
  }
  EXPECT_TRUE((SymExpr(5000) * SymExpr(0)).terms().empty());
  EXPECT_LT(SymExpr(3), SymExpr(2000));
}

TEST(SymExpr, EvaluatesAndPrints) {
  SymExpr e = SymExpr::parse("start_pos + s0");
  EXPECT_EQ(e.eval({{"start_pos", 3}, {"s0", 4}}), 7);
  EXPECT_THROW(e.eval({{"s0", 4}}), std::out_of_range);
  EXPECT_EQ(SymExpr::parse("s0 + 1").str(), "s0 + 1");
  EXPECT_EQ(SymExpr(5).str(), "5");
  EXPECT_TRUE(SymExpr::symbol("s0").is_symbol());
  EXPECT_FALSE(SymExpr::parse("2*s0").is_symbol());
}

TEST(SymExpr, ParseErrorsNameTheText) {
  try {
    SymExpr::parse("s0 + ");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("s0 + "), std::string::npos);
  }
  EXPECT_THROW(SymExpr::parse("s0 $ 1"), std::invalid_argument);
}

TEST(SymExpr, EvaluationChecksOverflow) {
  SymExpr e = SymExpr::parse("s0*s0*s0*s0 + 1");
  EXPECT_EQ(e.eval({{"s0", 4}}), 257);
  try {
    e.eval({{"s0", 65536}});  // 2^64 + 1, which wraps to 1 unchecked
    FAIL();
  } catch (const std::overflow_error& err) {
    EXPECT_EQ(std::string(err.what()), "size 's0*s0*s0*s0 + 1' overflows int64 at s0=65536");
  }
  EXPECT_THROW(SymExpr::parse("s0 + 9").eval({{"s0", INT64_MAX - 8}}), std::overflow_error);
  EXPECT_EQ(SymExpr::parse("s0 - 1").eval({{"s0", INT64_MIN + 1}}), INT64_MIN);
}

TEST(SymExpr, ParsingIsBounded) {
  // Coefficients that overflow, text longer than 256 characters, and
  // products of sums that multiply out to more than 64 terms.
  EXPECT_THROW(SymExpr::parse("999999999999999*999999999999999*999999999999999"), std::invalid_argument);
  EXPECT_THROW(SymExpr::parse(std::string(100000, '(') + "s0" + std::string(100000, ')')),
               std::invalid_argument);
  std::string product;
  for (char c = 'a'; c <= 'h'; ++c) product += std::string(product.empty() ? "" : "*") + "(" + c + "+1)";
  try {
    SymExpr::parse(product);  // 2^8 terms
    FAIL();
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("more than 64 terms"), std::string::npos) << err.what();
  }
  EXPECT_NO_THROW(SymExpr::parse("(a+1)*(b+1)*(c+1)*(d+1)*(e+1)*(f+1)"));  // 64 terms
}

TEST(ShapeEnv, StaticallyKnownUsesRangesNotHints) {
  ShapeEnv env({{"s0", {8, 2, 64}}, {"s1", {8, 1, 16}}});
  SymExpr s0 = SymExpr::symbol("s0"), s1 = SymExpr::symbol("s1");
  EXPECT_TRUE(env.statically_known({s0, Rel::eq, s0}));
  EXPECT_FALSE(env.statically_known({s0, Rel::eq, s1}));   // equal only on the hint
  EXPECT_EQ(env.on_hint({s0, Rel::eq, s1}), true);
  EXPECT_TRUE(env.statically_known({s0 + 1, Rel::gt, s0}));
  EXPECT_TRUE(env.statically_known({s0, Rel::ge, SymExpr(2)}));
  EXPECT_FALSE(env.statically_known({s0, Rel::le, s1}));
  EXPECT_TRUE(env.statically_known({s0 * 2, Rel::ge, s0}));
}

TEST(ShapeEnv, UnbackedSymbolsHaveNoHint) {
  ShapeEnv env({{"u0", {std::nullopt, 1, 10}}});
  EXPECT_FALSE(env.on_hint({SymExpr::symbol("u0"), Rel::eq, SymExpr(1)}).has_value());
  EXPECT_FALSE(env.hints().has_value());
}

TEST(GuardContext, RecordsAssumptionsMadeOnHints) {
  ShapeEnv env({{"s0", {4, 1, 64}}, {"s1", {4, 1, 64}}});
  GuardContext g(env, "%sdpa");
  Fact same{SymExpr::symbol("s0"), Rel::eq, SymExpr::symbol("s1")};
  EXPECT_FALSE(g.known(same));
  EXPECT_TRUE(g.on_hint(same, "lengths"));
  g.rule("lengths", true, "s0 == s1 on the hint");
  Decision d = g.finish();
  EXPECT_TRUE(d.rewrite);
  ASSERT_EQ(d.assumptions.size(), 1u);
  EXPECT_EQ(d.assumptions[0].fact.str(), "s0 == s1");
  EXPECT_FALSE(d.assumptions[0].fact.holds({{"s0", 4}, {"s1", 5}}));
}

TEST(GuardContext, FirstFailedRuleDecides) {
  ShapeEnv env;
  GuardContext g(env, "%sdpa");
  g.rule("rank", true);
  g.rule("heads", false, "Hq 4 vs Hkv 3");
  g.rule("dropout", false);
  Decision d = g.finish();
  EXPECT_FALSE(d.rewrite);
  EXPECT_EQ(d.deciding_rule, "heads");
}

}  // namespace
}  // namespace sdpa
