#pragma once
/// What a guard may know about symbolic sizes: ranges, export hints, and the
/// facts it assumed on the hints (checked later at every runtime size).
#include <optional>
#include <string>
#include <vector>

#include "harness/ir/symbolic.h"

namespace sdpa {

struct SymbolInfo {
  std::optional<int64_t> hint;  // the export example's size; none: unbacked
  int64_t min = 1;
  int64_t max = 1;
};

enum class Rel { eq, ne, lt, le, gt, ge };
const char* rel_str(Rel r);

/// A comparison between two sizes, such as "Lq == Lkv".
struct Fact {
  SymExpr lhs;
  Rel rel;
  SymExpr rhs;
  bool holds(const Assignment& values) const;
  std::string str() const;
};

class ShapeEnv {
 public:
  ShapeEnv() = default;
  explicit ShapeEnv(std::map<std::string, SymbolInfo> symbols) : symbols_(std::move(symbols)) {}

  const std::map<std::string, SymbolInfo>& symbols() const { return symbols_; }

  /// Bounds of an expression over every size in range (interval arithmetic:
  /// sound, possibly wider than the exact range).
  std::pair<int64_t, int64_t> range(const SymExpr& e) const;

  /// True only if the fact holds for every size the symbols allow.
  bool statically_known(const Fact& f) const;

  /// The fact evaluated on the export hints; none when an unbacked symbol
  /// (no hint) takes part.
  std::optional<bool> on_hint(const Fact& f) const;

  /// The hint of every symbol; none when some symbol is unbacked.
  std::optional<Assignment> hints() const;

 private:
  std::map<std::string, SymbolInfo> symbols_;
};

/// One guard rule's outcome, in the order the guard evaluated it.
struct RuleOutcome {
  std::string rule;    // e.g. "heads", "causal-alignment"
  bool passed = true;
  std::string detail;  // what was compared, with sizes
};

/// A fact the guard took as true because it holds on the export hints,
/// though not for every size in range.
struct Assumption {
  Fact fact;
  std::string rule;
};

/// What a pass's guard decided for one node.
struct Decision {
  std::string node;        // the node the guard looked at
  bool rewrite = false;
  std::string deciding_rule;  // the first failed rule, or "accept"
  std::vector<RuleOutcome> rules;
  std::vector<Assumption> assumptions;
  bool forced = false;  // rewritten past a rejecting guard
  std::string pass;     // the pass that decided (filled by the checker)
  /// Filled by the checker's completeness stage: the rewrite of this node
  /// alone (forced where the guard kept it, every other node held) refines
  /// the entry graph at every runtime size and, for a kept node (for an
  /// accepted one with CheckOptions::prove_accepted), at every proof size
  /// on both data draws (harness/check/proof_sizes.h).
  bool sound_alone = false;
  /// Where that rewrite held at every runtime size but failed: the proof
  /// size and data draw, in words ("s0 = 1 (the min of s0; Lq 2, Lkv 1)").
  /// Empty when it held everywhere, failed at a runtime size already, or
  /// was not proven.
  std::string refuted_at;
};

/// Records rule outcomes and hint assumptions while a guard runs.
class GuardContext {
 public:
  explicit GuardContext(const ShapeEnv& env, std::string node) : env_(env) {
    decision_.node = std::move(node);
  }
  const ShapeEnv& env() const { return env_; }

  /// True when the fact holds for every size in range.
  bool known(const Fact& f) const { return env_.statically_known(f); }

  /// True when the fact holds on the hints; records it as an assumption
  /// unless it is statically known. False for unbacked symbols.
  bool on_hint(const Fact& f, const std::string& rule);

  /// Records a rule outcome; returns `passed` so guards read as `if (!rule(...))`.
  bool rule(const std::string& name, bool passed, const std::string& detail = "");

  Decision finish();

 private:
  const ShapeEnv& env_;
  Decision decision_;
};

}  // namespace sdpa
