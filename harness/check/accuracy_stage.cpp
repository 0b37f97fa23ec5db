#include "harness/check/case_checker.h"

#include <algorithm>
#include <cstring>

namespace sdpa {

namespace check_internal {

// The error model depends only on the run and the kernel set's declared
// numerics for this case and graph: computed once per run and set.
CaseChecker::NumericsKey CaseChecker::numerics_key(const KernelNumerics& n) {
  const FloatNumerics& f = n.fp;
  const QuantizedNumerics& q = n.quant;
  const auto bits = [](double x) {
    uint64_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
  };
  const auto code = [](auto e) { return static_cast<uint64_t>(static_cast<int64_t>(e)); };
  NumericsKey key{code(n.kind),        code(f.storage),      code(f.accumulation), code(f.operands),
                  code(f.scores),      code(f.probabilities), code(f.split_scale), bits(q.input_qmax),
                  bits(q.score_step),  bits(q.prob_step),    bits(q.output_qmax),  bits(q.multiplier_rel),
                  bits(q.softmax_unit), bits(q.softmax_abs), code(q.ranges_clip), bits(q.step_floor)};
  size_t i = 16;
  for (const Int8Grid* g : {&q.q, &q.k, &q.v, &q.prob, &q.out, &q.scores, &q.unmasked_scores})
    for (double x : {g->step, g->lo, g->hi}) key[i++] = bits(x);
  return key;
}

// The bound depends only on the run and the declaration: kernel sets that
// declare the same numerics share one computation.
const ErrorBound& CaseChecker::error_bound(size_t r, const std::string& kernel_set, const KernelNumerics& n,
                                           const Graph* g) {
  auto key = std::make_pair(r, numerics_key(n));
  auto it = bounds_.find(key);
  if (it == bounds_.end()) {
    ErrorBound b = ref_.bound(meaning_, tensors_[r], sdpa_goldens_[r], n);
    if (composite_) b = composite_->bound(b, tensors_[r], sdpa_goldens_[r], g ? *g : Graph{});
    it = bounds_.emplace(key, std::move(b)).first;
  }
  return it->second;
}

// Compares one output with golden; records a finding and returns false
// when it fails. `baseline` null: the exact run (soundness). `g`: the
// graph that gave `out`.
// `numerics`: the kernel set's declaration, with a baseline.
bool CaseChecker::judge(const Tensor& out, size_t r, const std::string& kernel_set, const Tensor* baseline,
           const Graph& g, const KernelNumerics* numerics) {
  auto t0 = Clock::now();
  const Golden& gold = baseline ? goldens_[r] : entry_refs_[r];  // soundness: refinement of g0
  Comparison cmp;
  ErrorBound bound;
  DType dtype = c_.dtype;
  if (baseline) {
    bound = error_bound(r, kernel_set, *numerics, &g);
    cmp = compare_accuracy(out, *baseline, gold, bound, dtype);
    if (cmp.shape_ok && cmp.nonfinite_rows.empty()) {
      const double step = numerics->kind == KernelNumerics::Kind::quantized ? numerics->quant.output_step : 0.0;
      result_.accuracy.push_back({kernel_set, dtype, cmp.ratio, cmp.model_ratio, step > 0 ? cmp.max_abs / step : -1.0});
    }
  } else {
    cmp = compare_exact(out, gold, value_scale());
    note_margin(cmp);
  }
  result_.timing.compare += seconds_since(t0);
  if (cmp.within) return true;
  Check check = baseline ? (opt_.passes ? Check::accuracy : Check::identity) : Check::soundness;
  Finding f = finding(Verdict::pass, check, "");
  f.kernel_set = kernel_set;
  f.run = static_cast<int>(r);
  f.sizes = runs_[r];
  f.violated_assumptions = violated_assumptions(r);
  if (!cmp.shape_ok) {
    f.verdict = Verdict::shape_mismatch;
    f.detail = "output shape " + shape_str(out.shape) + ", golden " + shape_str(gold.out.shape);
    result_.findings.push_back(f);
    return false;
  }
  const bool values_bad = baseline ? cmp.ratio > 1.0 : cmp.max_abs > cmp.bound;
  if (!cmp.nonfinite_rows.empty()) {
    auto declared = target_.explains_nan(c_, tensors_[r], gold, cmp.nonfinite_rows,
                                         kernel_set.empty() ? "exact" : kernel_set, g);
    Finding nf = nonfinite_finding(f, cmp, out, gold, declared);
    if (baseline) nf.first_node = first_divergence(g, r, kernel_set);
    result_.findings.push_back(nf);
    // Rows a declared divergence explains aside, the others must still be
    // within bound; when they are, the later checks go on.
    if (!declared) return false;
    if (!values_bad) return true;
  }
  f.verdict = baseline ? Verdict::inaccurate_kernel : Verdict::unsound_rewrite;
  f.error = std::fabs(out.data[cmp.worst] - gold.out.data[cmp.worst]);
  f.bound = cmp.bound;
  f.error_ulps = f.error / ulp(dtype, gold.out.data[cmp.worst]);
  f.index = unravel(cmp.worst, out.shape);
  f.detail = "output" + shape_str(f.index) + " = " + std::to_string(out.data[cmp.worst]) +
             ", golden " + std::to_string(gold.out.data[cmp.worst]) +
             largest_score(gold, cmp.worst / std::max<int64_t>(1, out.shape.back()));
  if (baseline) f.bound_inputs = bound.inputs();
  if (baseline) f.first_node = first_divergence(g, r, kernel_set);
  result_.findings.push_back(f);
  return false;
}

Finding CaseChecker::nonfinite_finding(Finding f, const Comparison& cmp, const Tensor& out, const Golden& gold,
                          const std::optional<std::string>& declared) const {
  f.verdict = declared ? Verdict::known_divergence : Verdict::nan_mismatch;
  int64_t row = cmp.nonfinite_rows[0];
  f.index = unravel(cmp.nonfinite_first, gold.out.shape);
  f.detail = (declared ? "declared divergence " + *declared + ": " : std::string()) +
             std::to_string(cmp.nonfinite_rows.size()) + " query row(s) differ from golden in finiteness; first output" +
             shape_str(f.index) + " = " + number_str(out.data[cmp.nonfinite_first]) + ", golden " +
             number_str(gold.out.data[cmp.nonfinite_first]) + (gold.fully_masked[row] ? " (fully masked row)" : "") +
             largest_score(gold, row);
  return f;
}

std::string CaseChecker::largest_score(const Golden& gold, int64_t row) {
  if (row < 0 || row >= static_cast<int64_t>(gold.row_max_score.size())) return "";
  return "; the row's largest score " + number_str(gold.row_max_score[row]);
}

// The first node whose value on the target kernels departs from the
// exact run by far more than rounding (or in finiteness).
std::string CaseChecker::first_divergence(const Graph& g, size_t r, const std::string& kernel_set) {
  const KernelSet* target_kernels = nullptr;
  for (const auto& ks : target_.kernel_sets())
    if (ks.kernels->name() == kernel_set) target_kernels = ks.kernels;
  if (!target_kernels) return "";
  Outcome exact = execute(g, target_.exact_kernels(), r, false, true);
  Outcome got = execute(g, *target_kernels, r, false, true);
  if (!exact.exec || !got.exec) return "";
  std::string largest;
  double largest_rel = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op == "placeholder" || n.op == "get_attr") continue;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const Tensor& e = exact.exec->values[i][o];
      const Tensor& t = got.exec->values[i][o];
      if (e.shape != t.shape) return "%" + n.name + " (" + n.op + ")";
      double diff = 0;
      bool finiteness = false;
      for (int64_t k = 0; k < e.numel(); ++k) {
        const bool both_finite = std::isfinite(e.data[k]) && std::isfinite(t.data[k]);
        if (both_finite) diff = std::max(diff, std::fabs(e.data[k] - t.data[k]));
        else if (!(e.data[k] == t.data[k] || (std::isnan(e.data[k]) && std::isnan(t.data[k])))) finiteness = true;
      }
      double rel = diff / std::max(e.max_abs(), 1e-300);
      std::string name = "%" + n.name + " (" + n.op + ")";
      if (finiteness || rel > std::sqrt(unit_roundoff(n.outputs[o].dtype))) return name;
      if (rel > 0 && rel > largest_rel) largest_rel = rel, largest = name;
    }
  }
  return largest;
}

void CaseChecker::accuracy(const Graph& g0, const Graph& g1, bool rewritten) {
  std::vector<std::optional<Tensor>> baselines(runs_.size());
  bool claimed = false;
  for (const auto& ks : target_.kernel_sets()) {
    if (std::find(ks.dtypes.begin(), ks.dtypes.end(), c_.dtype) == ks.dtypes.end()) continue;
    claimed = true;
    // A set that declares no numerics has no bound: counted, never judged.
    const KernelNumerics numerics = ks.numerics ? ks.numerics(c_, g1) : KernelNumerics{};
    if (numerics.kind == KernelNumerics::Kind::none) {
      Finding f = unsupported("kernel set " + ks.kernels->name() + " declares no numerics for " +
                              dtype_name(c_.dtype) + ": accuracy not checked");
      f.check = opt_.passes ? Check::accuracy : Check::identity;
      f.kernel_set = ks.kernels->name();
      result_.findings.push_back(f);
      continue;
    }
    for (size_t r = 0; r < runs_.size(); ++r) {
      if (!baselines[r]) {
        Outcome b = execute(g0, target_.baseline_kernels(), r, false);
        if (!b.exec) {
          result_.findings.push_back(harness_bug("baseline run failed: " + b.error.detail));
          return;
        }
        baselines[r] = b.exec->outputs[0];
      }
      Outcome o = execute(g1, *ks.kernels, r, rewritten);
      if (!o.exec) {
        if (o.error.check != Check::robustness) o.error.check = opt_.passes ? Check::accuracy : Check::identity;
        result_.findings.push_back(o.error);
        break;
      }
      if (!judge(o.exec->outputs[0], r, ks.kernels->name(), &*baselines[r], g1, &numerics)) break;
    }
  }
  if (!claimed)
    result_.findings.push_back(unsupported(std::string("no kernel set of target ") +
                                           target_.name() + " claims dtype " + dtype_name(c_.dtype)));
}

}  // namespace check_internal

}  // namespace sdpa
