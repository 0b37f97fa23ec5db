#include "harness/campaign/campaign.h"

#include <gtest/gtest.h>

namespace sdpa {
namespace {

rc::Gen<Case> lengths() {
  return rc::gen::map(rc::gen::pair(rc::gen::inRange<int64_t>(1, 64), rc::gen::inRange<int64_t>(1, 64)),
                      [](const std::pair<int64_t, int64_t>& p) {
                        Case c;
                        c.q_len = p.first;
                        c.kv_len = p.second;
                        return c;
                      });
}

TEST(Campaign, CaseSeedsDependOnIterationNotShards) {
  EXPECT_EQ(case_seed(1, "aten", 17), case_seed(1, "aten", 17));
  EXPECT_NE(case_seed(1, "aten", 17), case_seed(1, "aten", 18));
  EXPECT_NE(case_seed(1, "aten", 17), case_seed(1, "llm", 17));
  EXPECT_NE(case_seed(1, "aten", 17), case_seed(2, "aten", 17));
}

TEST(Campaign, ShrinksToTheSmallestFailingCase) {
  // Fails when Lkv > Lq + 5: the minimum is Lq = 1, Lkv = 7.
  auto fails = [](const Case& c) { return c.kv_len.constant() > c.q_len.constant() + 5; };
  for (uint64_t seed = 0; seed < 50; ++seed) {
    rc::Shrinkable<Case> s = lengths()(rc::Random(seed), 100);
    if (!fails(s.value())) continue;
    auto [c, steps] = shrink_case(s, fails, 10000);
    EXPECT_EQ(c.q_len.constant(), 1);
    EXPECT_EQ(c.kv_len.constant(), 7);
    EXPECT_GT(steps, 0);
  }
}

TEST(Campaign, ShrinkingStopsAtTheStepBudget) {
  auto always = [](const Case&) { return true; };
  rc::Shrinkable<Case> s = lengths()(rc::Random(3), 100);
  auto [c, steps] = shrink_case(s, always, 1);
  EXPECT_LE(steps, 2);
}

}  // namespace
}  // namespace sdpa
