// gen_lazy draws what its generator draws from the same Random, shrinks
// through the same candidates in the same order, and runs the generator
// only when the value or the shrinks are read.
#include "generators/lazy_draw.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "generators/draws.h"

namespace sdpa {
namespace {

// A value and shrink tree that depend on the Random: a size and a flag.
rc::Gen<std::pair<int64_t, bool>> pair_gen() { return rc::gen::pair(gen_size(0, 1000), gen_flag(0.5)); }

// The values of the first `depth` levels of shrinks, depth first.
template <typename T, typename Read>
void walk(const rc::Shrinkable<T>& s, int depth, Read read, std::vector<std::pair<int64_t, bool>>& out) {
  out.push_back(read(s.value()));
  if (depth == 0) return;
  auto shrinks = s.shrinks();
  while (auto next = shrinks.next()) walk(*next, depth - 1, read, out);
}

TEST(LazyDraw, SameValueAndShrinksAsItsGenerator) {
  const auto plain = pair_gen();
  const auto lazy = gen_lazy(pair_gen());
  size_t candidates = 0;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    std::vector<std::pair<int64_t, bool>> a, b;
    walk(plain(rc::Random(seed), 50), 2, [](const auto& v) { return v; }, a);
    walk(lazy(rc::Random(seed), 50), 2, [](const auto& v) { return v.get(); }, b);
    ASSERT_EQ(a, b) << seed;
    candidates += a.size() - 1;
  }
  EXPECT_GT(candidates, 500u);  // the trees compared are not trivial
}

TEST(LazyDraw, DrawsOnlyWhenRead) {
  auto runs = std::make_shared<int>(0);
  const rc::Gen<int> counted = [runs](const rc::Random& r, int) {
    ++*runs;
    return rc::shrinkable::just(static_cast<int>(rc::Random(r).next() % 7));
  };
  const auto lazy = gen_each(std::vector<rc::Gen<Lazy<int>>>(3, gen_lazy(counted)));
  const rc::Shrinkable<std::vector<Lazy<int>>> s = lazy(rc::Random(1), 10);
  const std::vector<Lazy<int>> v = s.value();
  EXPECT_EQ(*runs, 0);
  const int second = v[1].get();
  EXPECT_EQ(*runs, 1);
  EXPECT_EQ(v[1].get(), second);  // read once, kept
  EXPECT_EQ(*runs, 1);
  EXPECT_EQ(s.value()[1].get(), second);
  EXPECT_EQ(*runs, 1);
}

}  // namespace
}  // namespace sdpa
