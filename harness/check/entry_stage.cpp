#include "harness/check/case_checker.h"

#include <cmath>

namespace sdpa {

namespace check_internal {

// The entry graph run exactly at every run: the reference the rewritten
// graph must refine. Where the entry means an SDPA call, it must match
// the oracles; a difference is the entry form's model, never a pass.
// Outside the cross-check sample, with finite data and goldens and no fully
// masked row, the golden stands in for that run (entry_run_ false);
// check_entry_late runs it once the case has a finding.
bool CaseChecker::check_entry(const Graph& g0) {
  entry_run_ = entry_runs_up_front();
  for (size_t r = 0; r < runs_.size(); ++r) {
    Golden ref;  // g0's exact output (or the golden); the oracles' fully masked rows
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

bool CaseChecker::entry_runs_up_front() const {
  if (sampled_for_cross_check() || needs_cross_check()) return true;
  for (const Golden& g : goldens_)  // a composite's module golden
    for (double x : g.out.data)
      if (!std::isfinite(x)) return true;
  return false;
}

// The entry graph run after the checks, on a case with a finding whose
// checks read the golden in its place. Where it differs from the oracles
// the result is what check_entry gives, that finding alone. Where it
// agrees, every comparison made against the golden keeps its verdict
// against the run: bit for bit the same values, or a distance from its
// bound larger than what can move, |run - golden| in the difference and
// 1e-9 of it in the bound (with room for the difference's rounding). A
// closer one (a rewrite's error next to the 1e-9 line) and the case is
// checked again in full.
CaseChecker::Late CaseChecker::check_entry_late(const Graph& g0) {
  if (entry_run_ || result_.findings.empty()) return Late::done;
  double moved = 0;  // max |run - golden| over the elements finite in both
  for (size_t r = 0; r < runs_.size(); ++r) {
    Golden ref;
    if (std::optional<Finding> f = run_entry(g0, r, ref)) {
      restart_with(std::move(*f));
      return Late::done;
    }
    moved = std::max(moved, largest_difference(ref.out, entry_refs_[r].out));
  }
  if (moved == 0) return Late::done;
  return closest_to_bound_ > 2 * moved ? Late::done : Late::check_again;
}

// A comparison against the golden standing in for the entry graph's run.
void CaseChecker::note_margin(const Comparison& cmp) {
  if (entry_run_) return;
  const double margin = std::fabs(cmp.max_abs - cmp.bound) - 0x1p-50 * cmp.bound;
  closest_to_bound_ = std::min(closest_to_bound_, margin);
}

// The whole case again, the entry graph and the second oracle up front
// (what oracle_sample 1 gives); the time of both checks is counted.
CaseResult CaseChecker::check_again_in_full() {
  CheckOptions full = opt_;
  full.oracle_sample = 1;
  CaseResult r = CaseChecker(target_, ref_, c_, full).run();
  r.timing += result_.timing;
  return r;
}

double CaseChecker::largest_difference(const Tensor& a, const Tensor& b) {
  double d = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (std::isfinite(a.data[i]) && std::isfinite(b.data[i])) d = std::max(d, std::fabs(a.data[i] - b.data[i]));
  return d;
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
