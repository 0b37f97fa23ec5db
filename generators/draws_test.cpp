#include "generators/draws.h"

#include <gtest/gtest.h>

namespace sdpa {
namespace {

template <typename T>
rc::Shrinkable<T> draw(const rc::Gen<T>& g, uint64_t seed, int size = 50) {
  return g(rc::Random(seed), size);
}

TEST(GenChoice, NeverDrawsOrShrinksToZeroWeight) {
  auto g = gen_choice({0.0, 1.0, 0.0, 2.0});
  int seen3 = 0;
  for (uint64_t seed = 0; seed < 500; ++seed) {
    auto s = draw(g, seed);
    ASSERT_TRUE(s.value() == 1 || s.value() == 3);
    seen3 += s.value() == 3;
    EXPECT_TRUE(rc::seq::all(rc::shrinkable::immediateShrinks(s), [](size_t i) { return i == 1; }));
  }
  EXPECT_GT(seen3, 250);  // weight 2 of 3
  EXPECT_LT(seen3, 420);
}

TEST(GenChoice, KeepsProbabilitiesAtSizeZero) {
  auto g = gen_choice({1.0, 1.0});
  int ones = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) ones += draw(g, seed, 0).value() == 1;
  EXPECT_GT(ones, 150);
}

TEST(GenChoice, RejectsAllZeroWeights) {
  EXPECT_THROW(gen_choice({0.0, 0.0}), std::invalid_argument);
}

TEST(GenSize, StaysInRangeAndShrinksToLowerBound) {
  auto g = gen_size(3, 40, {1, 32, 33, 100}, 0.5);
  int edges = 0;
  for (uint64_t seed = 0; seed < 500; ++seed) {
    auto s = draw(g, seed);
    ASSERT_GE(s.value(), 3);
    ASSERT_LE(s.value(), 40);
    edges += s.value() == 32 || s.value() == 33;
    auto min = rc::shrinkable::findLocalMin(s, [](int64_t) { return true; });
    EXPECT_EQ(min.first, 3);
  }
  EXPECT_GT(edges, 180);
}

TEST(GenSeed, BelowTwoToThe53AndNeverShrinks) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    auto s = draw(gen_seed(), seed, 0);
    EXPECT_LT(s.value(), uint64_t{1} << 53);
    EXPECT_FALSE(s.shrinks().next());
  }
  EXPECT_NE(draw(gen_seed(), 1, 0).value(), draw(gen_seed(), 2, 0).value());
}

TEST(GenEach, DrawsEveryGeneratorAndShrinksOneElementAtATime) {
  auto g = gen_each(std::vector<rc::Gen<int64_t>>{gen_size(1, 9), gen_size(5, 9)});
  for (uint64_t seed = 0; seed < 100; ++seed) {
    auto s = draw(g, seed);
    const std::vector<int64_t> v = s.value();
    ASSERT_EQ(v.size(), 2u);
    EXPECT_TRUE(v[0] >= 1 && v[0] <= 9 && v[1] >= 5 && v[1] <= 9);
    int first = 0, second = 0;
    auto shrinks = rc::shrinkable::immediateShrinks(s);
    while (auto w = shrinks.next()) {
      first += (*w)[0] != v[0] && (*w)[1] == v[1];
      second += (*w)[0] == v[0] && (*w)[1] != v[1];
    }
    EXPECT_EQ(first > 0, v[0] > 1);
    EXPECT_EQ(second > 0, v[1] > 5);
  }
}

TEST(SizeCap, ScalesFromFloorToMax) {
  EXPECT_EQ(size_cap(40, 0, 2), 2);
  EXPECT_EQ(size_cap(40, 50, 2), 21);
  EXPECT_EQ(size_cap(40, 100, 2), 40);
  EXPECT_EQ(size_cap(40, 1000, 2), 40);
  EXPECT_EQ(size_cap(1, 0, 2), 1);
}

}  // namespace
}  // namespace sdpa
