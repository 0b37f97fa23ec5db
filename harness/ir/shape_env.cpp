#include "harness/ir/shape_env.h"

#include <algorithm>

namespace sdpa {

const char* rel_str(Rel r) {
  switch (r) {
    case Rel::eq: return "==";
    case Rel::ne: return "!=";
    case Rel::lt: return "<";
    case Rel::le: return "<=";
    case Rel::gt: return ">";
    case Rel::ge: return ">=";
  }
  return "?";
}

bool Fact::holds(const Assignment& values) const {
  int64_t a = lhs.eval(values), b = rhs.eval(values);
  switch (rel) {
    case Rel::eq: return a == b;
    case Rel::ne: return a != b;
    case Rel::lt: return a < b;
    case Rel::le: return a <= b;
    case Rel::gt: return a > b;
    case Rel::ge: return a >= b;
  }
  return false;
}

std::string Fact::str() const { return lhs.str() + " " + rel_str(rel) + " " + rhs.str(); }

std::pair<int64_t, int64_t> ShapeEnv::range(const SymExpr& e) const {
  int64_t lo = 0, hi = 0;
  for (const auto& [mono, w] : e.terms()) {
    int64_t tlo = w, thi = w;
    if (w < 0) std::swap(tlo, thi);  // keep tlo <= thi through the products
    for (const auto& s : mono) {
      auto it = symbols_.find(s);
      int64_t smin = it == symbols_.end() ? 0 : it->second.min;
      int64_t smax = it == symbols_.end() ? INT32_MAX : it->second.max;
      int64_t c[4] = {tlo * smin, tlo * smax, thi * smin, thi * smax};
      tlo = *std::min_element(c, c + 4);
      thi = *std::max_element(c, c + 4);
    }
    lo += tlo;
    hi += thi;
  }
  return {lo, hi};
}

bool ShapeEnv::statically_known(const Fact& f) const {
  SymExpr d = f.lhs - f.rhs;
  if (d.is_constant()) {
    Assignment none;
    return Fact{d, f.rel, SymExpr(0)}.holds(none);
  }
  auto [lo, hi] = range(d);
  switch (f.rel) {
    case Rel::eq: return lo == 0 && hi == 0;
    case Rel::ne: return lo > 0 || hi < 0;
    case Rel::lt: return hi < 0;
    case Rel::le: return hi <= 0;
    case Rel::gt: return lo > 0;
    case Rel::ge: return lo >= 0;
  }
  return false;
}

std::optional<Assignment> ShapeEnv::hints() const {
  Assignment a;
  for (const auto& [name, info] : symbols_) {
    if (!info.hint) return std::nullopt;
    a[name] = *info.hint;
  }
  return a;
}

std::optional<bool> ShapeEnv::on_hint(const Fact& f) const {
  Assignment a;
  for (const auto& s : f.lhs.symbols()) {
    auto it = symbols_.find(s);
    if (it == symbols_.end() || !it->second.hint) return std::nullopt;
    a[s] = *it->second.hint;
  }
  for (const auto& s : f.rhs.symbols()) {
    auto it = symbols_.find(s);
    if (it == symbols_.end() || !it->second.hint) return std::nullopt;
    a[s] = *it->second.hint;
  }
  return f.holds(a);
}

bool GuardContext::on_hint(const Fact& f, const std::string& rule) {
  if (env_.statically_known(f)) return true;
  auto v = env_.on_hint(f);
  if (!v || !*v) return false;
  decision_.assumptions.push_back({f, rule});
  return true;
}

bool GuardContext::rule(const std::string& name, bool passed, const std::string& detail) {
  decision_.rules.push_back({name, passed, detail});
  if (!passed && decision_.deciding_rule.empty()) decision_.deciding_rule = name;
  return passed;
}

Decision GuardContext::finish() {
  decision_.rewrite = decision_.deciding_rule.empty();
  if (decision_.rewrite) decision_.deciding_rule = "accept";
  return decision_;
}

}  // namespace sdpa
