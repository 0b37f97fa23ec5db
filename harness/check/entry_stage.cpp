#include "harness/check/case_checker.h"

namespace sdpa {

namespace check_internal {

// The entry graph run exactly at every run: the reference the rewritten
// graph must refine. Where the entry means an SDPA call, it must match
// the oracles; a difference is the entry form's model, never a pass.
bool CaseChecker::check_entry(const Graph& g0) {
  for (size_t r = 0; r < runs_.size(); ++r) {
    Outcome o = execute(g0, target_.exact_kernels(), r, false);
    if (!o.exec) {
      o.error.check = Check::oracle;
      o.error.detail = "the entry graph does not run exactly: " + o.error.detail;
      result_.findings.push_back(o.error);
      return false;
    }
    Golden ref;  // g0's exact output; the oracles' fully masked rows
    ref.out = o.exec->outputs[0];
    ref.fully_masked = goldens_[r].fully_masked;
    entry_refs_.push_back(std::move(ref));
    Comparison cmp = compare_exact(entry_refs_.back().out, goldens_[r], value_scale());
    if (cmp.within) continue;
    Finding f = finding(Verdict::entry_disagree, Check::oracle, "");
    f.run = static_cast<int>(r);
    f.sizes = runs_[r];
    f.detail = "the entry graph (entry " + option_or(target_.options(), "entry", "default") +
               (c_.variant.empty() ? "" : ", variant " + c_.variant) +
               ") run exactly differs from the oracles: " + difference(cmp, entry_refs_.back().out, goldens_[r].out);
    result_.findings.push_back(f);
    return false;
  }
  return true;
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
