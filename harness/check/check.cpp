#include "harness/check/case_checker.h"
#include "harness/check/kernel_fault.h"
#include "harness/check/pass_fault.h"

namespace sdpa {

const Finding* CaseResult::primary() const {
  const Finding* best = nullptr;
  for (const auto& f : findings)
    if (!best || f.verdict < best->verdict) best = &f;
  return best;
}

namespace check_internal {

// The stages, in order of trust: inputs and goldens (the oracles), the
// entry graph against them, the passes, soundness (the rewritten graph
// refines the entry graph), invariants, accuracy, completeness.
CaseResult CaseChecker::run() {
  check_variant();
  if (auto why = target_.refuses(c_)) return finish_with(unsupported(*why));
  if (!prepare()) return finish();
  Graph g0 = target_.entry(c_);
  if (auto problems = verify_graph(g0); !problems.empty())
    return finish_with(harness_bug("entry graph does not verify: " + problems[0]));
  if (!check_entry(g0)) return finish();
  std::optional<Graph> g1 = apply_passes(g0, {}, &result_.decisions);
  if (!g1) return finish_after_entry(g0);
  result_.counters = target_.counters(c_, g0, *g1);
  if (opt_.keep_graphs) {
    result_.graph_before = print_graph(g0);
    result_.graph_after = print_graph(*g1);
    result_.entry_graph = std::make_shared<const Graph>(g0);
    result_.rewritten_graph = std::make_shared<const Graph>(*g1);
  }
  bool rewritten = false;
  for (const auto& d : result_.decisions) rewritten = rewritten || d.rewrite;
  Violations violations;
  std::vector<std::string> type_errors;
  if (opt_.passes) violations = target_.violations(c_, g0, *g1), type_errors = target_.type_errors(*g1);
  std::vector<std::string>& broken = violations.structural;
  for (const auto& v : broken) result_.findings.push_back(finding(Verdict::broken_invariant, Check::invariant, v));
  for (const auto& k : violations.kernel) {
    Finding f = finding(Verdict::inaccurate_kernel, Check::accuracy, k.detail);
    f.kernel_set = k.kernel_set;
    f.first_node = k.node;
    result_.findings.push_back(std::move(f));
  }
  for (const auto& e : type_errors) result_.findings.push_back(finding(Verdict::dtype_mismatch, Check::soundness, e));
  broken.insert(broken.end(), type_errors.begin(), type_errors.end());
  // A pass may change the graph around a node it kept (dead transposes):
  // any change is checked for soundness.
  const bool changed = rewritten || (opt_.passes && !same_graph(*g1, g0));
  // A graph the pipeline's retrace rejects never runs.
  const bool sound = type_errors.empty() && (!changed || check_rewritten(g0, *g1));
  if (sound) accuracy(g0, *g1, rewritten);
  // Completeness and the per-node attribution run on unsound cases too:
  // the gate reads every decision's own soundness.
  // A lone accepted node's own soundness follows refines(), as every forced
  // or held rewrite's does: a broken invariant makes it unsound too.
  if (opt_.completeness && opt_.passes) completeness(g0, *g1, sound && broken.empty());
  return finish_after_entry(g0);
}

CaseResult CaseChecker::finish_after_entry(const Graph& g0) {
  if (check_entry_late(g0) == Late::check_again) return check_again_in_full();
  return finish();
}

Finding CaseChecker::finding(Verdict v, Check check, const std::string& detail) const {
  Finding f;
  f.verdict = v;
  f.check = check;
  f.detail = detail;
  return f;
}

Finding CaseChecker::unsupported(const std::string& why) const {
  return finding(Verdict::unsupported, Check::robustness, why);
}

Finding CaseChecker::harness_bug(const std::string& why) const {
  return finding(Verdict::unexpected_error, Check::identity, "harness: " + why);
}

CaseResult CaseChecker::finish_with(Finding f) {
  result_.findings.push_back(std::move(f));
  return finish();
}

// The result of a stage that ends the case before the others ran: `f`
// alone, with the time spent so far.
void CaseChecker::restart_with(Finding f) {
  CaseResult first;
  first.timing = result_.timing;
  result_ = std::move(first);
  result_.findings.push_back(std::move(f));
}

CaseResult CaseChecker::finish() {
  cross_check_late();
  const Finding* primary = result_.primary();
  // The defect class only matters for what a campaign records.
  if (primary && (is_failure(primary->verdict) || primary->verdict == Verdict::missed_rewrite)) {
    std::string cls = target_.failure_class(c_);
    for (auto& f : result_.findings) f.failure_class = cls;
  }
  if (primary) {
    result_.verdict = primary->verdict;
  } else {
    result_.verdict = Verdict::pass;
    for (const auto& d : result_.decisions)
      if (!d.rewrite) result_.verdict = Verdict::rejected;
  }
  return std::move(result_);
}

// A variant or causal alignment the target's entry form does not take is
// a bad file, not a case.
void CaseChecker::check_variant() const {
  const CaseSpace space = target_.case_space();
  if (c_.is_causal && std::find(space.causal_alignments.begin(), space.causal_alignments.end(),
                                c_.causal_alignment) == space.causal_alignments.end())
    throw InputError(std::string("case.causal_alignment: the entry form of target ") + target_.name() +
                     " does not align a causal mask " + alignment_name(c_.causal_alignment));
  const auto& variants = space.variants;
  if (c_.variant.empty() && variants.empty()) return;
  std::string names;
  for (const auto& [name, weight] : variants) {
    if (name == c_.variant) return;
    names += (names.empty() ? "" : ", ") + name;
  }
  if (c_.variant.empty()) return;  // the target's first (default) variant
  throw InputError("case.variant: target " + target_.name() + (names.empty() ? " has no variants" : " has variants " + names) +
                   "; got \"" + c_.variant + "\"");
}

// Tensors and golden outputs at every run, from the SDPA call the entry
// graph means; false on oracle disagreement.
bool CaseChecker::prepare() {
  auto t0 = Clock::now();
  composite_ = target_.composite(c_);
  for (const auto& at : runs_) {
    tensors_.push_back(composite_ ? composite_->sdpa_tensors(at) : make_case_tensors(c_, at));
    inputs_.push_back(target_.inputs(c_, tensors_.back()));
  }
  for (const auto& t : tensors_) value_scale_ = std::max(value_scale_, composite_ ? composite_->scale(t) : t.v.max_abs());
  value_scale_ /= 1.0 - c_.dropout_p;
  result_.timing.generate += seconds_since(t0);
  t0 = Clock::now();
  const bool cross_check = sampled_for_cross_check();
  for (size_t r = 0; r < runs_.size(); ++r) {
    sdpa_goldens_.push_back(cross_check ? ref_.golden(meaning_, tensors_[r], runs_[r])
                                        : ref_.unchecked_golden(meaning_, tensors_[r], runs_[r]));
    goldens_.push_back(composite_ ? composite_golden(*composite_, sdpa_goldens_.back()) : sdpa_goldens_.back());
    if (!goldens_.back().disagreement.empty()) {
      Finding f = finding(Verdict::oracle_disagree, Check::oracle, goldens_.back().disagreement);
      f.run = static_cast<int>(r);
      f.sizes = runs_[r];
      result_.findings.push_back(f);
      result_.timing.oracle += seconds_since(t0);
      return false;
    }
  }
  result_.timing.oracle += seconds_since(t0);
  return true;
}

bool CaseChecker::sampled_for_cross_check() const {
  if (opt_.oracle_sample <= 1) return true;
  return splitmix64_mix(c_.data.seed ^ 0x6f7261636c65ULL) % static_cast<uint64_t>(opt_.oracle_sample) == 0;
}

bool CaseChecker::needs_cross_check() const {
  if (!result_.findings.empty()) return true;
  auto non_finite = [](const Tensor& t) {
    for (double x : t.data)
      if (!std::isfinite(x)) return true;
    return false;
  };
  for (const CaseTensors& t : tensors_)
    if (non_finite(t.q) || non_finite(t.k) || non_finite(t.v) || (t.mask && non_finite(*t.mask))) return true;
  for (const Golden& g : sdpa_goldens_) {
    if (non_finite(g.out)) return true;
    for (uint8_t masked : g.fully_masked)
      if (masked) return true;
  }
  return false;
}

void CaseChecker::cross_check_late() {
  bool pending = false;
  for (const Golden& g : sdpa_goldens_) pending = pending || !g.cross_checked;
  result_.oracle_cross_checked = !pending;  // vacuously, when no golden was computed
  if (!pending || !needs_cross_check()) return;
  const auto t0 = Clock::now();
  for (size_t r = 0; r < sdpa_goldens_.size(); ++r) {
    Golden& g = sdpa_goldens_[r];
    if (!g.cross_checked) ref_.cross_check(meaning_, tensors_[r], runs_[r], g);
    if (g.disagreement.empty()) continue;
    // As prepare() ends on a disagreement: that finding alone.
    Finding f = finding(Verdict::oracle_disagree, Check::oracle, g.disagreement);
    f.run = static_cast<int>(r);
    f.sizes = runs_[r];
    restart_with(std::move(f));
    break;
  }
  result_.oracle_cross_checked = true;
  result_.timing.oracle += seconds_since(t0);
}

// Runs the passes, rewriting in each pass the nodes its control selects
// (the guard's choices where it has none).
std::optional<Graph> CaseChecker::apply_passes(const Graph& g0, const Controls& controls,
                                  std::vector<Decision>* decisions) {
  if (!opt_.passes) return g0;
  auto passes = target_.passes();
  const bool forcing = !controls.empty();
  // The first pass reads g0 itself: each pass returns a new graph.
  Graph g;
  const Graph* in = &g0;
  for (size_t i = 0; i < passes.size(); ++i) {
    try {
      auto control = controls.find(static_cast<int>(i));
      Pass::Result r = control != controls.end() ? passes[i]->run(*in, env_, control->second)
                                                 : passes[i]->run(*in, env_);
      g = std::move(r.graph);
      in = &g;
      for (auto& d : r.decisions) d.pass = passes[i]->name();
      if (decisions) {
        decisions->insert(decisions->end(), r.decisions.begin(), r.decisions.end());
        decision_pass_.resize(decisions->size(), static_cast<int>(i));
      }
    } catch (const PassFault& e) {
      // The process running the pass failed, not the pass: a finding in forced runs too.
      result_.findings.push_back(finding(e.verdict, Check::robustness, "pass " + passes[i]->name() + ": " + e.what()));
      return std::nullopt;
    } catch (const PassUnsupported& e) {
      if (forcing) return std::nullopt;
      result_.findings.push_back(unsupported("pass " + passes[i]->name() + " raised: " + e.what()));
      return std::nullopt;
    } catch (const std::exception& e) {
      if (forcing) return std::nullopt;  // a forced rewrite that fails is just unsound
      result_.findings.push_back(finding(Verdict::unexpected_error, Check::robustness,
                                         "pass " + passes[i]->name() + " raised: " + e.what()));
      return std::nullopt;
    }
  }
  if (in == &g0) return g0;  // no passes
  return g;
}

Outcome CaseChecker::execute(const Graph& g, const KernelSet& k, size_t r, bool rewritten, bool keep) {
  Outcome o = execute_on(g, k, runs_[r], inputs_[r], c_.data.seed, rewritten, keep);
  if (!o.exec) {
    o.error.run = static_cast<int>(r);
    o.error.violated_assumptions = violated_assumptions(r);
  }
  return o;
}

Outcome CaseChecker::execute_on(const Graph& g, const KernelSet& k, const Assignment& at,
                                const std::map<std::string, Tensor>& inputs, uint64_t seed, bool rewritten,
                                bool keep, NodeMemo* memo) {
  Outcome o;
  RunContext ctx{at, seed};
  auto t0 = Clock::now();
  Verdict failed = Verdict::pass;
  Check check = main_check();
  std::string msg;
  try {
    o.exec = memo && !keep ? interpret(g, k, inputs, ctx, *memo) : interpret(g, k, inputs, ctx, keep);
  } catch (const KernelFault& e) {
    // The process computing the kernel failed, not the kernel: as a pass's.
    msg = e.what();
    failed = e.verdict;
    check = Check::robustness;
  } catch (const KernelError& e) {
    msg = e.what();
    failed = e.kind == KernelError::Kind::fatal         ? Verdict::crash
             : e.kind == KernelError::Kind::unsupported ? Verdict::unsupported
             : rewritten                                ? Verdict::invalid_rewrite
                                                        : Verdict::unsupported;
  } catch (const GraphError& e) {
    msg = e.what();
    failed = rewritten ? Verdict::invalid_rewrite : Verdict::unexpected_error;
  } catch (const std::exception& e) {
    msg = e.what();
    failed = Verdict::unexpected_error;
  }
  result_.timing.kernels += seconds_since(t0);
  if (!o.exec) {
    o.error = finding(failed, check, msg);
    o.error.kernel_set = &k == &target_.exact_kernels() ? "" : k.name();
    o.error.sizes = at;
  }
  return o;
}

std::unique_ptr<NodeMemo> CaseChecker::make_memo(const Assignment& at, uint64_t seed) {
  if (!opt_.reuse_exact_nodes) return nullptr;
  return std::make_unique<NodeMemo>(target_.exact_kernels(), RunContext{at, seed}, &memo_budget_);
}

std::vector<std::string> CaseChecker::violated_assumptions(size_t r) const {
  std::vector<std::string> out;
  for (const auto& d : result_.decisions)
    for (const auto& a : d.assumptions)
      if (!a.fact.holds(runs_[r]))
        out.push_back(a.fact.str() + " (rule " + a.rule + ", assumed on the export hint)");
  return out;
}

}  // namespace check_internal

CaseResult run_case(const Target& target, const ReferenceModel& reference, const Case& c,
                    const CheckOptions& options) {
  return check_internal::CaseChecker(target, reference, c, options).run();
}

}  // namespace sdpa
