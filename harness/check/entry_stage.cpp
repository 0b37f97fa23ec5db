#include "harness/check/case_checker.h"

namespace sdpa {

namespace check_internal {

// The entry graph run exactly at every run: the reference the rewritten
// graph must refine. Where the entry means an SDPA call, it must match
// the oracles; a difference is the entry form's model, never a pass.
// A case outside the cross-check sample refines the golden instead (it
// agrees with that run wherever the check passes); its entry graph runs
// late, in check_entry_late, when the case has a finding.
bool CaseChecker::check_entry(const Graph& g0) {
  entry_run_ = sampled_for_cross_check() || needs_cross_check();
  for (size_t r = 0; r < runs_.size(); ++r) {
    Golden ref;  // g0's exact output; the oracles' fully masked rows
    if (!entry_run_) {
      ref.out = goldens_[r].out;
      ref.fully_masked = goldens_[r].fully_masked;
    } else if (std::optional<Finding> f = run_entry(g0, r, ref)) {
      result_.findings.push_back(std::move(*f));
      return false;
    }
    entry_refs_.push_back(std::move(ref));
  }
  return true;
}

// As check_entry on a case outside the sample that has a finding: on a
// difference the result is what check_entry gives, that finding alone.
void CaseChecker::check_entry_late(const Graph& g0) {
  if (entry_run_ || result_.findings.empty()) return;
  entry_run_ = sampled_for_cross_check() || needs_cross_check();
  for (size_t r = 0; r < runs_.size(); ++r) {
    Golden ref;
    std::optional<Finding> f = run_entry(g0, r, ref);
    if (!f) continue;
    CaseResult first;
    first.timing = result_.timing;
    result_ = std::move(first);
    result_.findings.push_back(std::move(*f));
    return;
  }
}

// g0 run exactly at run r into ref.out, and compared with the oracles' golden.
std::optional<Finding> CaseChecker::run_entry(const Graph& g0, size_t r, Golden& ref) {
  Outcome o = execute(g0, target_.exact_kernels(), r, false);
  if (!o.exec) {
    o.error.check = Check::oracle;
    o.error.detail = "the entry graph does not run exactly: " + o.error.detail;
    return o.error;
  }
  ref.out = o.exec->outputs[0];
  ref.fully_masked = goldens_[r].fully_masked;
  Comparison cmp = compare_exact(ref.out, goldens_[r], value_scale());
  if (cmp.within) return std::nullopt;
  Finding f = finding(Verdict::entry_disagree, Check::oracle, "");
  f.run = static_cast<int>(r);
  f.sizes = runs_[r];
  f.detail = "the entry graph (entry " + option_or(target_.options(), "entry", "default") +
             (c_.variant.empty() ? "" : ", variant " + c_.variant) +
             ") run exactly differs from the oracles: " + difference(cmp, ref.out, goldens_[r].out);
  return f;
}

std::string CaseChecker::option_or(const Options& o, const std::string& key, const std::string& fallback) {
  auto it = o.find(key);
  return it == o.end() ? fallback : it->second;
}

// Where two outputs differ, in words.
std::string CaseChecker::difference(const Comparison& cmp, const Tensor& out, const Tensor& ref) {
  if (!cmp.shape_ok) return "output shape " + shape_str(out.shape) + ", expected " + shape_str(ref.shape);
  if (!cmp.nonfinite_rows.empty())
    return std::to_string(cmp.nonfinite_rows.size()) + " row(s) differ in finiteness, first output" +
           shape_str(unravel(cmp.nonfinite_first, out.shape)) + " = " + number_str(out.data[cmp.nonfinite_first]) +
           ", expected " + number_str(ref.data[cmp.nonfinite_first]);
  return "output" + shape_str(unravel(cmp.worst, out.shape)) + " = " + std::to_string(out.data[cmp.worst]) +
         ", expected " + std::to_string(ref.data[cmp.worst]) + " (|difference| " +
         std::to_string(cmp.max_abs) + " > " + std::to_string(cmp.bound) + ")";
}

}  // namespace check_internal

}  // namespace sdpa
