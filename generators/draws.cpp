#include "generators/draws.h"

#include <algorithm>
#include <memory>

namespace sdpa {
namespace {

// A uniform double in [0, 1) from the top 53 bits.
double unit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// An offset in [0, span], log-uniform: first a bit length, then a value of at
// most that many bits, so that each power-of-two band is equally likely.
int64_t log_uniform_offset(rc::Random& r, int64_t span) {
  int bits = 0;
  while (bits < 63 && (int64_t{1} << bits) <= span) ++bits;
  const auto k = static_cast<int>(r.next() % static_cast<uint64_t>(bits + 1));
  const int64_t top = k == 0 ? 0 : std::min(span, (int64_t{1} << k) - 1);
  return static_cast<int64_t>(r.next() % static_cast<uint64_t>(top + 1));
}

}  // namespace

rc::Gen<size_t> gen_choice(std::vector<double> weights, const std::string& what) {
  double total = 0;
  for (double w : weights) {
    if (!(w >= 0)) throw std::invalid_argument(what + ": a weight is negative or NaN");
    total += w;
  }
  if (!(total > 0))
    throw std::invalid_argument(what + ": every option the case space allows has weight 0");
  // Shared, not copied, by each draw and its shrinks: a campaign draws
  // some hundred choices per case.
  auto shared = std::make_shared<const std::vector<double>>(std::move(weights));
  return [shared, total](const rc::Random& random, int) {
    const std::vector<double>& weights = *shared;
    double u = unit(rc::Random(random).next()) * total;
    size_t pick = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (weights[i] == 0) continue;
      pick = i;  // rounding can leave u just past the last bucket: keep the last allowed
      if (u < weights[i]) break;
      u -= weights[i];
    }
    return rc::shrinkable::shrinkRecur(pick, [shared](size_t x) {
      const std::vector<double>& weights = *shared;
      std::vector<size_t> lower;
      for (size_t i = 0; i < x; ++i)
        if (weights[i] > 0) lower.push_back(i);
      return rc::seq::fromContainer(std::move(lower));
    });
  };
}

rc::Gen<bool> gen_flag(double p) {
  p = std::clamp(p, 0.0, 1.0);
  return rc::gen::map(gen_choice({1.0 - p, p}), [](size_t i) { return i == 1; });
}

rc::Gen<int64_t> gen_size(int64_t lo, int64_t hi, std::vector<int64_t> favoured,
                          double p_favoured) {
  if (hi < lo)
    throw std::invalid_argument("gen_size: empty range [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "]");
  favoured.erase(
      std::remove_if(favoured.begin(), favoured.end(), [&](int64_t v) { return v < lo || v > hi; }),
      favoured.end());
  return [lo, hi, favoured, p_favoured](const rc::Random& random, int) {
    rc::Random r(random);
    int64_t v = (!favoured.empty() && unit(r.next()) < p_favoured)
                    ? favoured[r.next() % favoured.size()]
                    : lo + log_uniform_offset(r, hi - lo);
    return rc::shrinkable::shrinkRecur(v, [lo](int64_t x) { return rc::shrink::towards(x, lo); });
  };
}

rc::Gen<uint64_t> gen_seed() {
  return rc::gen::noShrink(rc::Gen<uint64_t>([](const rc::Random& random, int) {
    return rc::shrinkable::just(rc::Random(random).next() >> 11);
  }));
}

int64_t size_cap(int64_t max, int size, int64_t floor) {
  floor = std::min(floor, max);
  const int64_t s = std::clamp(size, 0, 100);
  return floor + (max - floor) * s / 100;
}

}  // namespace sdpa
