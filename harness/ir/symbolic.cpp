#include "harness/ir/symbolic.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace sdpa {

namespace {

// The constants sizes are mostly made of, built once: SymExpr(1) and the
// like are made for every dimension of every shape a pass emits.
constexpr int64_t kSharedMin = -8, kSharedMax = 1024;

const std::shared_ptr<const SymExpr::Terms>& shared_constant(int64_t c) {
  static const std::vector<std::shared_ptr<const SymExpr::Terms>> table = [] {
    std::vector<std::shared_ptr<const SymExpr::Terms>> t;
    for (int64_t v = kSharedMin; v <= kSharedMax; ++v)
      t.push_back(v == 0 ? nullptr : std::make_shared<const SymExpr::Terms>(SymExpr::Terms{{{}, v}}));
    return t;
  }();
  return table[static_cast<size_t>(c - kSharedMin)];
}

}  // namespace

SymExpr::SymExpr(int64_t constant) {
  if (constant >= kSharedMin && constant <= kSharedMax) terms_ = shared_constant(constant);
  else terms_ = std::make_shared<const Terms>(Terms{{{}, constant}});
}

SymExpr SymExpr::symbol(const std::string& name) { return from(Terms{{{name}, 1}}); }

SymExpr SymExpr::from(Terms t) {
  for (auto it = t.begin(); it != t.end();) it = it->second == 0 ? t.erase(it) : std::next(it);
  if (t.empty()) return SymExpr();
  // A constant of the shared table; any other expression keeps the map just built.
  if (t.size() == 1 && t.begin()->first.empty()) {
    const int64_t c = t.begin()->second;
    if (c >= kSharedMin && c <= kSharedMax) return SymExpr(c);
  }
  SymExpr e;
  e.terms_ = std::make_shared<const Terms>(std::move(t));
  return e;
}

const SymExpr::Terms& SymExpr::terms() const {
  static const Terms empty;
  return terms_ ? *terms_ : empty;
}

bool SymExpr::is_constant() const {
  const Terms& t = terms();
  return t.empty() || (t.size() == 1 && t.begin()->first.empty());
}

int64_t SymExpr::constant() const {
  if (!is_constant()) throw std::logic_error("size '" + str() + "' is not a constant");
  return terms().empty() ? 0 : terms().begin()->second;
}

bool SymExpr::is_symbol() const {
  const Terms& t = terms();
  return t.size() == 1 && t.begin()->first.size() == 1 && t.begin()->second == 1;
}

std::set<std::string> SymExpr::symbols() const {
  std::set<std::string> out;
  for (const auto& [mono, w] : terms()) out.insert(mono.begin(), mono.end());
  return out;
}

namespace {

// Checked int64 arithmetic: sizes come from files, and a wrapped product
// would pass every size limit ("s0*s0*s0*s0 + 1" at s0 = 65536 is 1).
int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw std::overflow_error(what);
  return r;
}
int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw std::overflow_error(what);
  return r;
}

std::string assignment_str(const std::set<std::string>& names, const Assignment& values) {
  std::string out;
  for (const auto& n : names) {
    auto it = values.find(n);
    if (it != values.end()) out += (out.empty() ? "" : ", ") + n + "=" + std::to_string(it->second);
  }
  return out;
}

}  // namespace

int64_t SymExpr::eval(const Assignment& values) const {
  try {
    int64_t total = 0;
    for (const auto& [mono, w] : terms()) {
      int64_t p = w;
      for (const auto& s : mono) {
        auto it = values.find(s);
        if (it == values.end()) throw std::out_of_range("no value for symbol '" + s + "'");
        p = checked_mul(p, it->second, "");
      }
      total = checked_add(total, p, "");
    }
    return total;
  } catch (const std::overflow_error&) {
    throw std::overflow_error("size '" + str() + "' overflows int64 at " + assignment_str(symbols(), values));
  }
}

std::string SymExpr::str() const {
  const Terms& terms = this->terms();
  if (terms.empty()) return "0";
  std::string out;
  // Symbols first, constant last: "s0 + 1" reads like a size.
  for (auto it = terms.rbegin(); it != terms.rend(); ++it) {
    const auto& [mono, w] = *it;
    int64_t mag = w < 0 ? -w : w;
    if (out.empty()) out += w < 0 ? "-" : "";
    else out += w < 0 ? " - " : " + ";
    std::string m;
    for (const auto& s : mono) m += (m.empty() ? "" : "*") + s;
    if (m.empty()) out += std::to_string(mag);
    else out += (mag == 1 ? "" : std::to_string(mag) + "*") + m;
  }
  return out;
}

SymExpr SymExpr::operator+(const SymExpr& o) const {
  Terms r = terms();
  for (const auto& [mono, w] : o.terms()) {
    int64_t& t = r[mono];
    t = checked_add(t, w, "a size coefficient overflows int64");
  }
  return from(std::move(r));
}

SymExpr SymExpr::operator-(const SymExpr& o) const { return *this + o * SymExpr(-1); }

SymExpr SymExpr::operator*(const SymExpr& o) const {
  Terms r;
  for (const auto& [a, wa] : terms())
    for (const auto& [b, wb] : o.terms()) {
      std::vector<std::string> m = a;
      m.insert(m.end(), b.begin(), b.end());
      std::sort(m.begin(), m.end());
      int64_t& t = r[m];
      t = checked_add(t, checked_mul(wa, wb, "a size coefficient overflows int64"),
                      "a size coefficient overflows int64");
    }
  return from(std::move(r));
}

namespace {

// Recursive-descent parser: sum := product (('+'|'-') product)*,
// product := atom ('*' atom)*, atom := int | name | '(' sum ')' | '-' atom.
// Bounds on a parsed expression: the text is read recursively, and each
// product multiplies out its sums, so (a+b)*(c+d)*... would grow 2^n terms.
constexpr size_t kMaxExpressionLength = 256;
constexpr size_t kMaxTerms = 64;

class Parser {
 public:
  explicit Parser(const std::string& t) : text_(t) {}
  SymExpr parse() {
    if (text_.size() > kMaxExpressionLength)
      throw std::invalid_argument("size expression of " + std::to_string(text_.size()) +
                                  " characters, the limit is " + std::to_string(kMaxExpressionLength));
    SymExpr e;
    try {
      e = sum();
    } catch (const std::overflow_error& err) {
      fail(err.what());
    }
    skip();
    if (pos_ != text_.size()) fail("unexpected '" + text_.substr(pos_, 1) + "'");
    return e;
  }

 private:
  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < text_.size() && text_[pos_] == c) return ++pos_, true;
    return false;
  }
  [[noreturn]] void fail(const std::string& why) {
    throw std::invalid_argument("size expression '" + text_ + "': " + why);
  }
  SymExpr bounded(SymExpr e) {
    if (e.terms().size() > kMaxTerms)
      fail("more than " + std::to_string(kMaxTerms) + " terms when multiplied out");
    return e;
  }
  SymExpr sum() {
    SymExpr e = product();
    for (;;) {
      if (eat('+')) e = bounded(e + product());
      else if (eat('-')) e = bounded(e - product());
      else return e;
    }
  }
  SymExpr product() {
    SymExpr e = atom();
    while (eat('*')) e = bounded(e * atom());
    return e;
  }
  SymExpr atom() {
    skip();
    if (eat('(')) {
      SymExpr e = sum();
      if (!eat(')')) fail("missing ')'");
      return e;
    }
    if (eat('-')) return SymExpr(-1) * atom();
    size_t start = pos_;
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      if (pos_ - start > 15) fail("integer too large");
      return SymExpr(std::stoll(text_.substr(start, pos_ - start)));
    }
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    if (start == pos_) fail(pos_ < text_.size() ? "unexpected '" + text_.substr(pos_, 1) + "'"
                                                : "expected a size");
    return SymExpr::symbol(text_.substr(start, pos_ - start));
  }
  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace

SymExpr SymExpr::parse(const std::string& text) { return Parser(text).parse(); }

std::string shape_str(const SymShape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + shape[i].str();
  return out + "]";
}

std::vector<int64_t> eval_shape(const SymShape& shape, const Assignment& values) {
  std::vector<int64_t> out;
  out.reserve(shape.size());
  for (const auto& d : shape) out.push_back(d.eval(values));
  return out;
}

}  // namespace sdpa
