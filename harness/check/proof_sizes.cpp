#include "harness/check/proof_sizes.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

// A size of the case by the name a reader knows it.
struct Length {
  std::string name;
  SymExpr e;
};

std::vector<Length> lengths(const Case& c) {
  std::vector<Length> out = {{"Lq", c.q_len}, {"Lkv", c.kv_len}};
  if (c.start_pos != SymExpr(0)) {
    out.push_back({"start_pos", c.start_pos});
    // Where the cache ends: keys past it are the ones a cache-aware kernel skips.
    out.push_back({"start_pos + Lq", c.start_pos + c.q_len});
  }
  for (size_t i = 0; i < c.batch.size(); ++i) out.push_back({"batch[" + std::to_string(i) + "]", c.batch[i]});
  if (c.mask)
    for (size_t i = 0; i < c.mask->shape.size(); ++i)
      out.push_back({"mask.shape[" + std::to_string(i) + "]", c.mask->shape[i]});
  return out;
}

// The value of `s` that makes `d` zero with every other symbol at `base`:
// only where s enters d linearly on its own (w * s + rest) and w divides rest.
std::optional<int64_t> solve(const SymExpr& d, const std::string& s, const Assignment& base) {
  int64_t w = 0;
  for (const auto& [mono, coef] : d.terms()) {
    const bool has = std::find(mono.begin(), mono.end(), s) != mono.end();
    if (!has) continue;
    if (mono.size() != 1) return std::nullopt;  // s * t or s^2: not solved here
    w = coef;
  }
  if (w == 0) return std::nullopt;
  try {
    const int64_t rest = (d - SymExpr(w) * SymExpr::symbol(s)).eval(base);
    if (rest % w != 0) return std::nullopt;
    return -rest / w;
  } catch (const std::exception&) {
    return std::nullopt;  // a value that overflows is no size
  }
}

class Generator {
 public:
  Generator(const Case& c, const SizeLimits& limits, const ProofLimits& proof)
      : c_(c), limits_(limits), proof_(proof), lengths_(lengths(c)) {
    for (const auto& at : c.runs()) seen_.insert(at);
  }

  std::vector<ProofSize> run() {
    if (c_.symbols.empty()) return {};
    std::vector<Assignment> bases = {c_.runs()[0]};
    if (auto hints = ShapeEnv(c_.symbols).hints(); hints && *hints != bases[0]) bases.push_back(*hints);
    for (const auto& base : bases) {
      symbol_values(base);
      edges(base);
      pairs(base);
    }
    corners();
    std::stable_sort(found_.begin(), found_.end(),
                     [](const Found& a, const Found& b) { return a.cost < b.cost; });
    std::vector<ProofSize> out;
    for (const auto& f : found_) {
      if (out.size() >= proof_.max_sizes) break;
      out.push_back(f.size);
    }
    return out;
  }

 private:
  struct Found {
    ProofSize size;
    int64_t cost;  // score elements
  };

  enum class Fit { ok, invalid, too_large };

  static bool valid(const Case& c, const SizeLimits& limits) {
    try {
      validate_case(c, limits);
      return true;
    } catch (const InputError&) {
      return false;
    }
  }

  // Whether the size is in range, makes a valid case and fits both the
  // size limits and the proof's; `elements` gets its score elements.
  Fit fit(const Assignment& at, int64_t* elements = nullptr) const {
    Case probe = c_;
    probe.runtime = {at};
    if (!valid(probe, limits_)) {
      SizeLimits unbounded = limits_;
      unbounded.max_tensor_elements = INT64_MAX;
      return valid(probe, unbounded) ? Fit::too_large : Fit::invalid;
    }
    auto numel = [&](const SymShape& s) {
      int64_t n = 1;
      for (int64_t d : eval_shape(s, at)) n *= d;  // within int64: validate_case bounded every tensor
      return n;
    };
    int64_t largest = std::max({numel(score_shape(c_)), numel(query_shape(c_)), numel(key_shape(c_)),
                                numel(value_shape(c_))});
    if (c_.mask) largest = std::max(largest, numel(c_.mask->shape));
    if (largest > proof_.max_elements) return Fit::too_large;
    if (elements) *elements = numel(score_shape(c_));
    return Fit::ok;
  }

  bool add(const Assignment& at, const std::string& why) {
    if (seen_.count(at)) return false;
    int64_t n = 0;
    if (fit(at, &n) != Fit::ok) return false;
    seen_.insert(at);
    found_.push_back({{at, why}, n});
    return true;
  }

  static Assignment with(Assignment a, const std::string& s, int64_t v) {
    a[s] = v;
    return a;
  }

  void symbol_values(const Assignment& base) {
    for (const auto& [s, info] : c_.symbols) {
      add(with(base, s, info.min), "the min of " + s);
      max_or_largest(base, s, info);
      if (!info.hint) continue;
      const int64_t h = *info.hint;
      add(with(base, s, h), "the hint of " + s);
      if (h - 1 >= info.min)
        add(with(base, s, h - 1), "one below the hint of " + s);
      if (h + 1 <= info.max)
        add(with(base, s, h + 1), "one above the hint of " + s);
    }
  }

  // The symbol's max; where that breaks a limit, the largest value that
  // fits (sizes grow with every symbol, so a bisection finds it).
  void max_or_largest(const Assignment& base, const std::string& s, const SymbolInfo& info) {
    const Assignment at_max = with(base, s, info.max);
    if (seen_.count(at_max) || fit(at_max) != Fit::too_large) {
      add(at_max, "the max of " + s);
      return;
    }
    int64_t lo = info.min, hi = info.max;  // fit(lo) must be ok; hi is too large
    if (fit(with(base, s, lo)) != Fit::ok) return;
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (fit(with(base, s, mid)) == Fit::ok ? lo : hi) = mid;
    }
    add(with(base, s, lo),
        "the largest " + s + " the proof's size limit allows; its max is " + std::to_string(info.max));
  }

  void solve_for_each_symbol(const SymExpr& d, const Assignment& base, const std::string& what) {
    for (const auto& s : d.symbols()) {
      auto v = solve(d, s, base);
      if (!v) continue;
      const SymbolInfo& info = c_.symbols.at(s);
      if (*v < info.min || *v > info.max) continue;
      add(with(base, s, *v), what);
    }
  }

  // A length at 0 or 1: empty tensors, a single query or key.
  void edges(const Assignment& base) {
    for (const auto& l : lengths_) {
      if (l.e.is_constant()) continue;
      for (int64_t v : {0, 1}) solve_for_each_symbol(l.e - SymExpr(v), base, l.name + " = " + std::to_string(v));
    }
  }

  // Two lengths equal or one apart: where a rule comparing them flips.
  void pairs(const Assignment& base) {
    for (size_t i = 0; i < lengths_.size(); ++i)
      for (size_t j = i + 1; j < lengths_.size(); ++j) {
        const SymExpr diff = lengths_[i].e - lengths_[j].e;
        if (diff.is_constant()) continue;
        for (int64_t d : {0, 1, -1}) {
          const std::string what = lengths_[i].name + " = " + lengths_[j].name +
                                   (d > 0 ? " + 1" : d < 0 ? " - 1" : "");
          solve_for_each_symbol(diff - SymExpr(d), base, what);
        }
      }
  }

  void corners() {
    if (c_.symbols.size() < 2) return;  // one symbol: its min and max are corners already
    Assignment lo, hi;
    for (const auto& [s, info] : c_.symbols) lo[s] = info.min, hi[s] = info.max;
    add(lo, "every symbol at its min");
    add(hi, "every symbol at its max");
  }

  const Case& c_;
  const SizeLimits& limits_;
  const ProofLimits& proof_;
  const std::vector<Length> lengths_;
  std::set<Assignment> seen_;
  std::vector<Found> found_;
};

}  // namespace

std::vector<ProofSize> proof_sizes(const Case& c, const SizeLimits& limits, const ProofLimits& proof) {
  return Generator(c, limits, proof).run();
}

Case second_draw(const Case& c) {
  Case out = c;
  out.data.seed = splitmix64_mix(c.data.seed ^ fnv1a64("second draw"));
  out.data.distribution = Distribution::normal;
  out.data.special.reset();
  // q.k of normal data of magnitude m spreads as m^2 sqrt(E): times |scale|,
  // of order 1 at this m, so no weight saturates to 0 or 1.
  const double spread = std::fabs(c.effective_scale()) * std::sqrt(static_cast<double>(c.head_dim));
  out.data.magnitude = spread > 0 ? std::clamp(1.0 / std::sqrt(spread), 1.0 / 64, 64.0) : 1.0;
  return out;
}

std::string sizes_str(const Assignment& at) {
  if (at.empty()) return "static sizes";
  std::string s;
  for (const auto& [k, v] : at) s += (s.empty() ? "" : ", ") + k + " = " + std::to_string(v);
  return s;
}

}  // namespace sdpa
