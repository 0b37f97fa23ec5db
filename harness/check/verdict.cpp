#include "harness/check/verdict.h"

namespace sdpa {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::oracle_disagree: return "oracle-disagree";
    case Verdict::entry_disagree: return "entry-disagree";
    case Verdict::crash: return "crash";
    case Verdict::timeout: return "timeout";
    case Verdict::oom: return "oom";
    case Verdict::unexpected_error: return "unexpected-error";
    case Verdict::unsound_rewrite: return "unsound-rewrite";
    case Verdict::rounded_constant: return "rounded-constant";
    case Verdict::invalid_rewrite: return "invalid-rewrite";
    case Verdict::nan_mismatch: return "nan-mismatch";
    case Verdict::shape_mismatch: return "shape-mismatch";
    case Verdict::dtype_mismatch: return "dtype-mismatch";
    case Verdict::inaccurate_kernel: return "inaccurate-kernel";
    case Verdict::broken_invariant: return "broken-invariant";
    case Verdict::missed_rewrite: return "missed-rewrite";
    case Verdict::known_divergence: return "known-divergence";
    case Verdict::unsupported: return "unsupported";
    case Verdict::rejected: return "rejected";
    case Verdict::pass: return "pass";
  }
  return "?";
}

std::vector<Verdict> all_verdicts() {
  std::vector<Verdict> out;
  for (int v = 0; v <= static_cast<int>(Verdict::pass); ++v) out.push_back(static_cast<Verdict>(v));
  return out;
}

std::optional<Verdict> parse_verdict(const std::string& s) {
  for (Verdict v : all_verdicts())
    if (s == verdict_name(v)) return v;
  return std::nullopt;
}

bool is_failure(Verdict v) { return v < Verdict::missed_rewrite; }

Verdict worst(Verdict a, Verdict b) { return a < b ? a : b; }

const char* check_name(Check c) {
  switch (c) {
    case Check::oracle: return "oracle";
    case Check::soundness: return "soundness";
    case Check::accuracy: return "accuracy";
    case Check::completeness: return "completeness";
    case Check::invariant: return "invariant";
    case Check::robustness: return "robustness";
    case Check::identity: return "identity";
  }
  return "?";
}

}  // namespace sdpa
