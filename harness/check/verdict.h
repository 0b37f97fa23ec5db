#pragma once
/// Verdicts (NUMERICS.md), ordered from most to least severe.
#include <optional>
#include <string>
#include <vector>

namespace sdpa {

enum class Verdict {
  oracle_disagree,
  entry_disagree,    // the entry graph run exactly differs from the oracles: a model bug
  crash,
  timeout,
  oom,               // the case's process went past the memory limit
  unexpected_error,
  unsound_rewrite,
  rounded_constant,  // the rewrite changed a constant (a scale) by rounding: named with its ulps
  invalid_rewrite,
  nan_mismatch,
  shape_mismatch,
  dtype_mismatch,
  inaccurate_kernel,
  broken_invariant,
  missed_rewrite,
  known_divergence,
  unsupported,
  rejected,
  pass,
};

const char* verdict_name(Verdict v);
std::optional<Verdict> parse_verdict(const std::string& s);
std::vector<Verdict> all_verdicts();

/// A verdict that is a defect of the harness or the system under test (it
/// is shrunk and written to the corpus). missed-rewrite is a warning.
bool is_failure(Verdict v);
/// The more severe of two verdicts.
Verdict worst(Verdict a, Verdict b);

/// The checks, in order of trust (ARCHITECTURE.md).
enum class Check { oracle, soundness, accuracy, completeness, invariant, robustness, identity };
const char* check_name(Check c);

}  // namespace sdpa
