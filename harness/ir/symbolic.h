#pragma once
/// Symbolic sizes: integer polynomials over named symbols (s0 + 1, 2 * s1).
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace sdpa {

/// A value for every symbol of a case: one runtime size, or the export hints.
using Assignment = std::map<std::string, int64_t>;

/// A size expression: a sum of integer-weighted products of symbols, kept in
/// canonical form so that structurally equal sizes compare equal.
class SymExpr {
 public:
  SymExpr(int64_t constant = 0);  // NOLINT: integers are sizes
  static SymExpr symbol(const std::string& name);
  /// Parses integers, symbol names, +, -, * and parentheses ("s0 + 1"), at
  /// most 256 characters and 64 terms once multiplied out. Throws
  /// std::invalid_argument with the offending text.
  static SymExpr parse(const std::string& text);

  bool is_constant() const;
  /// The value of a constant expression; throws when it is not one.
  int64_t constant() const;
  /// True when the expression is exactly one symbol with weight 1.
  bool is_symbol() const;
  std::set<std::string> symbols() const;

  /// Value under an assignment; throws std::out_of_range naming a missing
  /// symbol, std::overflow_error naming the expression and the values when
  /// the value (or a partial product) leaves int64.
  int64_t eval(const Assignment& values) const;

  std::string str() const;

  /// Throw std::overflow_error when a coefficient leaves int64.
  SymExpr operator+(const SymExpr& o) const;
  SymExpr operator-(const SymExpr& o) const;
  SymExpr operator*(const SymExpr& o) const;
  bool operator==(const SymExpr& o) const { return terms_ == o.terms_ || terms() == o.terms(); }
  bool operator!=(const SymExpr& o) const { return !(*this == o); }
  bool operator<(const SymExpr& o) const { return terms() < o.terms(); }

  /// Monomial (sorted symbol names, repeated for powers) -> weight.
  using Terms = std::map<std::vector<std::string>, int64_t>;
  const Terms& terms() const;

 private:
  /// The expression of `t` once its zero weights are dropped.
  static SymExpr from(Terms t);
  /// Immutable and shared: a size is copied with its shape from node to node
  /// as a graph is built, and a copy allocates nothing. Null is the constant
  /// 0; otherwise the map is non-empty and holds no zero weight, so equal
  /// pointers are equal expressions and null is the only form of 0.
  std::shared_ptr<const Terms> terms_;
};

using SymShape = std::vector<SymExpr>;
std::string shape_str(const SymShape& shape);
std::vector<int64_t> eval_shape(const SymShape& shape, const Assignment& values);

}  // namespace sdpa
