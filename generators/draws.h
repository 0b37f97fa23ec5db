#pragma once
/// Draw primitives for the case generators. Unlike rc::gen::element and
/// rc::gen::inRange, these keep their probabilities at every RapidCheck size
/// (the callers scale caps with size instead) and they shrink: toward the
/// first option, toward false, toward the lower bound.
#include <rapidcheck.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "generators/gen_policy.h"

namespace sdpa {

/// Index i with probability weights[i] / sum(weights). Shrinks toward lower
/// indices, skipping those of weight 0 (never drawn, never shrunk to).
/// Throws std::invalid_argument naming `what` (the policy field) when a
/// weight is negative or all are 0.
rc::Gen<size_t> gen_choice(std::vector<double> weights, const std::string& what = "gen_choice");

/// True with probability p (clamped to [0, 1]); shrinks to false unless p >= 1.
rc::Gen<bool> gen_flag(double p);

/// An integer in [lo, hi]: with probability p_favoured one of the favoured
/// values inside the range, else log-uniform (small offsets from lo are
/// common). Shrinks toward lo. Throws std::invalid_argument when hi < lo.
rc::Gen<int64_t> gen_size(int64_t lo, int64_t hi, std::vector<int64_t> favoured = {},
                          double p_favoured = 0.0);

/// A tensor-data seed, uniform in [0, 2^53) (exact in JSON), never shrunk.
rc::Gen<uint64_t> gen_seed();

/// `max` scaled by RapidCheck's size: `floor` (or max, if smaller) at size 0,
/// `max` at size >= 100.
int64_t size_cap(int64_t max, int size, int64_t floor);

/// One of the weighted options; shrinks toward the front of the list.
template <typename T>
rc::Gen<T> gen_weighted(const Weighted<T>& options, const std::string& what = "gen_weighted") {
  std::vector<double> weights;
  std::vector<T> values;
  for (const auto& [value, weight] : options) {
    values.push_back(value);
    weights.push_back(weight);
  }
  return rc::gen::map(gen_choice(std::move(weights), what),
                      [values](size_t i) { return values[i]; });
}

/// One value from each generator, in order; shrinks one element at a time
/// (rc::gen::tuple for a list whose length is known only at run time).
template <typename T>
rc::Gen<std::vector<T>> gen_each(std::vector<rc::Gen<T>> gens) {
  using Parts = std::vector<rc::Shrinkable<T>>;
  return [gens](const rc::Random& random, int size) {
    rc::Random r(random);
    Parts parts;
    for (const auto& g : gens) parts.push_back(g(r.split(), size));
    return rc::shrinkable::map(
        rc::shrinkable::shrinkRecur(std::move(parts),
                                    [](const Parts& ps) {
                                      return rc::shrink::eachElement(
                                          ps,
                                          [](const rc::Shrinkable<T>& s) { return s.shrinks(); });
                                    }),
        [](const Parts& ps) {
          std::vector<T> values;
          for (const auto& s : ps) values.push_back(s.value());
          return values;
        });
  };
}

}  // namespace sdpa
