#include "harness/check/check.h"

#include <chrono>
#include <cmath>
#include <set>

#include "harness/check/compare.h"
#include "harness/io/json_reader.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/graph_verify.h"
#include "harness/ir/interpreter.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa {

const Finding* CaseResult::primary() const {
  const Finding* best = nullptr;
  for (const auto& f : findings)
    if (!best || f.verdict < best->verdict) best = &f;
  return best;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The outcome of executing a graph: outputs, or the finding its error is.
struct Outcome {
  std::optional<Execution> exec;
  Finding error;
};

class CaseChecker {
 public:
  CaseChecker(const Target& t, const ReferenceModel& r, const Case& c, const CheckOptions& o)
      : target_(t), ref_(r), c_(c), opt_(o), env_(c.shape_env()), runs_(c.runs()) {}

  // The stages, in order of trust: inputs and goldens (the oracles), the
  // entry graph against them, the passes, soundness (the rewritten graph
  // refines the entry graph), invariants, accuracy, completeness.
  CaseResult run() {
    check_variant();
    if (auto why = target_.refuses(c_)) return finish_with(unsupported(*why));
    if (!prepare()) return finish();
    Graph g0 = target_.entry(c_);
    if (auto problems = verify_graph(g0); !problems.empty())
      return finish_with(harness_bug("entry graph does not verify: " + problems[0]));
    if (!check_entry(g0)) return finish();
    std::vector<Graph> stages;  // the graph each pass saw
    std::optional<Graph> g1 = apply_passes(g0, {}, &stages, &result_.decisions);
    if (!g1) return finish();
    if (opt_.keep_graphs) {
      result_.graph_before = print_graph(g0);
      result_.graph_after = print_graph(*g1);
      result_.entry_graph = std::make_shared<const Graph>(g0);
      result_.rewritten_graph = std::make_shared<const Graph>(*g1);
    }
    bool rewritten = false;
    for (const auto& d : result_.decisions) rewritten = rewritten || d.rewrite;
    if (rewritten && !check_rewritten(g0, *g1)) return finish();
    accuracy(g0, *g1, rewritten);
    if (opt_.completeness && opt_.passes) completeness(stages);
    return finish();
  }

 private:
  Check main_check() const { return opt_.passes ? Check::soundness : Check::identity; }

  Finding finding(Verdict v, Check check, const std::string& detail) const {
    Finding f;
    f.verdict = v;
    f.check = check;
    f.detail = detail;
    return f;
  }
  Finding unsupported(const std::string& why) const {
    return finding(Verdict::unsupported, Check::robustness, why);
  }
  Finding harness_bug(const std::string& why) const {
    return finding(Verdict::unexpected_error, Check::identity, "harness: " + why);
  }

  CaseResult finish_with(Finding f) {
    result_.findings.push_back(std::move(f));
    return finish();
  }

  CaseResult finish() {
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

  // A variant the target does not define is a bad file, not a case.
  void check_variant() const {
    const auto variants = target_.case_space().variants;
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
  bool prepare() {
    auto t0 = Clock::now();
    for (const auto& at : runs_) {
      tensors_.push_back(make_case_tensors(c_, at));
      inputs_.push_back(target_.inputs(c_, tensors_.back()));
    }
    for (const auto& t : tensors_) value_scale_ = std::max(value_scale_, t.v.max_abs());
    value_scale_ /= 1.0 - c_.dropout_p;
    result_.timing.generate += seconds_since(t0);
    t0 = Clock::now();
    for (size_t r = 0; r < runs_.size(); ++r) {
      goldens_.push_back(ref_.golden(meaning_, tensors_[r], runs_[r]));
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

  // The entry graph run exactly at every run: the reference the rewritten
  // graph must refine. Where the entry means an SDPA call, it must match
  // the oracles; a difference is the entry form's model, never a pass.
  bool check_entry(const Graph& g0) {
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

  static std::string option_or(const Options& o, const std::string& key, const std::string& fallback) {
    auto it = o.find(key);
    return it == o.end() ? fallback : it->second;
  }

  // Where two outputs differ, in words.
  static std::string difference(const Comparison& cmp, const Tensor& out, const Tensor& ref) {
    if (!cmp.shape_ok) return "output shape " + shape_str(out.shape) + ", expected " + shape_str(ref.shape);
    if (!cmp.nonfinite_rows.empty())
      return std::to_string(cmp.nonfinite_rows.size()) + " row(s) differ in finiteness, first row " +
             std::to_string(cmp.nonfinite_rows[0]);
    return "output" + shape_str(unravel(cmp.worst, out.shape)) + " = " + std::to_string(out.data[cmp.worst]) +
           ", expected " + std::to_string(ref.data[cmp.worst]) + " (|difference| " +
           std::to_string(cmp.max_abs) + " > " + std::to_string(cmp.bound) + ")";
  }

  // Rewrite controls by pass index; a pass without one follows its guard.
  using Controls = std::map<int, RewriteControl>;

  // Runs the passes, rewriting in each pass the nodes its control selects
  // (the guard's choices where it has none).
  std::optional<Graph> apply_passes(const Graph& g0, const Controls& controls,
                                    std::vector<Graph>* stages, std::vector<Decision>* decisions) {
    Graph g = g0;
    if (!opt_.passes) return g;
    auto passes = target_.passes();
    const bool forcing = !controls.empty();
    for (size_t i = 0; i < passes.size(); ++i) {
      if (stages) stages->push_back(g);
      try {
        auto control = controls.find(static_cast<int>(i));
        Pass::Result r = control != controls.end() ? passes[i]->run(g, env_, control->second)
                                                   : passes[i]->run(g, env_);
        g = std::move(r.graph);
        for (auto& d : r.decisions) d.pass = passes[i]->name();
        if (decisions) {
          decisions->insert(decisions->end(), r.decisions.begin(), r.decisions.end());
          decision_pass_.resize(decisions->size(), static_cast<int>(i));
        }
      } catch (const std::exception& e) {
        if (forcing) return std::nullopt;  // a forced rewrite that fails is just unsound
        result_.findings.push_back(finding(Verdict::unexpected_error, Check::robustness,
                                           "pass " + passes[i]->name() + " raised: " + e.what()));
        return std::nullopt;
      }
    }
    return g;
  }

  Outcome execute(const Graph& g, const KernelSet& k, size_t r, bool rewritten, bool keep = false) {
    Outcome o;
    RunContext ctx{runs_[r], c_.data.seed};
    auto t0 = Clock::now();
    Verdict failed = Verdict::pass;
    std::string msg;
    try {
      o.exec = interpret(g, k, inputs_[r], ctx, keep);
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
      o.error = finding(failed, main_check(), msg);
      o.error.kernel_set = &k == &target_.exact_kernels() ? "" : k.name();
      o.error.run = static_cast<int>(r);
      o.error.sizes = runs_[r];
      o.error.violated_assumptions = violated_assumptions(r);
    }
    return o;
  }

  // The error model depends only on the run and the kernel set's declared
  // numerics for this case and graph: computed once per run and set.
  const ErrorBound& error_bound(size_t r, const std::string& kernel_set, const KernelNumerics& n) {
    auto key = std::make_pair(r, kernel_set);
    auto it = bounds_.find(key);
    if (it == bounds_.end()) it = bounds_.emplace(key, ref_.bound(meaning_, tensors_[r], goldens_[r], n)).first;
    return it->second;
  }

  // max |V| over every run, scaled by dropout: what an output averages.
  double value_scale() const { return value_scale_; }

  std::vector<std::string> violated_assumptions(size_t r) const {
    std::vector<std::string> out;
    for (const auto& d : result_.decisions)
      for (const auto& a : d.assumptions)
        if (!a.fact.holds(runs_[r]))
          out.push_back(a.fact.str() + " (rule " + a.rule + ", assumed on the export hint)");
    return out;
  }

  // The first computing node the rewrite introduced (not a layout or dtype
  // move): what an unsound rewrite replaced the original call with.
  static std::string rewrite_node(const Graph& g0, const Graph& g1) {
    static const std::set<std::string> moves = {
        "aten.transpose.int", "aten.permute.default", "aten.contiguous.default", "aten.clone.default",
        "aten.reshape.default", "aten.view.default", "aten._unsafe_view.default", "aten.expand.default",
        "aten.unsqueeze.default", "aten.squeeze.dims", "aten._to_copy.default"};
    for (const Node& n : g1.nodes)
      if (g0.find(n.name) < 0 && n.op != "placeholder" && n.op != "get_attr" && !moves.count(n.op))
        return "%" + n.name + " (" + n.op + ")";
    return "";
  }

  // The first node of the rewritten graph whose exact value differs from
  // the node of the same name and op in the entry graph; when every shared
  // node agrees, the first computing node the rewrite added.
  std::string diverging_node(const Graph& g0, const Graph& g1, size_t r, bool& shared_agree) {
    Outcome a = execute(g0, target_.exact_kernels(), r, false, true);
    Outcome b = execute(g1, target_.exact_kernels(), r, true, true);
    if (!a.exec || !b.exec) return rewrite_node(g0, g1);
    for (size_t i = 0; i < g1.nodes.size(); ++i) {
      const Node& n = g1.nodes[i];
      int j = g0.find(n.name);
      if (j < 0 || g0.nodes[j].op != n.op || n.op == "placeholder" || n.op == "get_attr") continue;
      const auto &va = a.exec->values[j], &vb = b.exec->values[i];
      for (size_t o = 0; o < std::min(va.size(), vb.size()); ++o)
        if (!values_agree(va[o], vb[o])) return "%" + n.name + " (" + n.op + ")";
    }
    shared_agree = true;
    return rewrite_node(g0, g1);
  }

  static bool values_agree(const Tensor& a, const Tensor& b) {
    if (a.shape != b.shape) return false;
    const double tol = 1e-9 * std::max(a.max_abs(), 1e-300);
    for (int64_t k = 0; k < a.numel(); ++k) {
      if (std::isnan(a.data[k]) && std::isnan(b.data[k])) continue;
      if (std::isfinite(a.data[k]) != std::isfinite(b.data[k])) return false;
      if (std::isfinite(a.data[k]) ? std::fabs(a.data[k] - b.data[k]) > tol : a.data[k] != b.data[k])
        return false;
    }
    return true;
  }

  // A constant the rewrite changed (read from both graphs): by at most a
  // few ulps of its dtype and not in sign, the finding is rounded-constant,
  // named with the constant, its ulps and its effect; otherwise the change
  // is added to the unsound finding's detail.
  void name_changed_constants(Finding& f, const Graph& g0, const Graph& g1) const {
    constexpr double kRoundingUlps = 4;
    std::string changes;
    bool rounding = true;
    for (const auto& k1 : target_.constants(g1))
      for (const auto& k0 : target_.constants(g0)) {
        if (k0.name != k1.name || k0.value == k1.value) continue;
        const double ulps = std::fabs(k1.value - k0.value) / ulp(k0.dtype, k0.value);
        rounding = rounding && ulps <= kRoundingUlps && std::signbit(k0.value) == std::signbit(k1.value);
        changes += (changes.empty() ? "" : "; ") + k0.name + " " + number_str(k0.value) + " in the entry, " +
                   number_str(k1.value) + " after the rewrite (" + number_str(ulps) + " ulp of " +
                   dtype_name(k0.dtype) + ")";
      }
    if (changes.empty()) return;
    if (rounding) f.verdict = Verdict::rounded_constant;
    f.detail = changes + "; effect: " + f.detail;
  }

  static std::string number_str(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", x);
    return buf;
  }

  // Verifies, checks invariants, and runs the rewrite exactly. False when a
  // failure makes the later checks meaningless.
  bool check_rewritten(const Graph& g0, const Graph& g1) {
    if (auto problems = verify_graph(g1); !problems.empty()) {
      result_.findings.push_back(
          finding(Verdict::invalid_rewrite, Check::soundness, "rewritten graph: " + problems[0]));
      return false;
    }
    for (const auto& v : target_.invariants(c_, g0, g1))
      result_.findings.push_back(finding(Verdict::broken_invariant, Check::invariant, v));
    if (g1.outputs.size() != 1 || g1.info(g1.outputs[0]).dtype != g0.info(g0.outputs[0]).dtype) {
      result_.findings.push_back(finding(Verdict::dtype_mismatch, Check::soundness,
                                         "the rewritten graph's output dtype differs from the original's"));
      return false;
    }
    for (size_t r = 0; r < runs_.size(); ++r) {
      Outcome o = execute(g1, target_.exact_kernels(), r, true);
      if (!o.exec) {
        result_.findings.push_back(o.error);
        return false;
      }
      if (!judge(o.exec->outputs[0], r, "", nullptr, nullptr)) {
        Finding& f = result_.findings.back();
        bool shared_agree = false;
        f.first_node = diverging_node(g0, g1, r, shared_agree);
        if (shared_agree && !f.first_node.empty())
          f.detail += "; every node the two graphs share agrees: the first computing node the rewrite added is named";
        if (f.verdict == Verdict::unsound_rewrite) name_changed_constants(f, g0, g1);
        return false;
      }
    }
    return true;
  }

  // Compares one output with golden; records a finding and returns false
  // when it fails. `baseline` null: the exact run (soundness).
  // `numerics`: the kernel set's declaration, with a baseline.
  bool judge(const Tensor& out, size_t r, const std::string& kernel_set, const Tensor* baseline,
             const Graph* g, const KernelNumerics* numerics = nullptr) {
    auto t0 = Clock::now();
    const Golden& gold = baseline ? goldens_[r] : entry_refs_[r];  // soundness: refinement of g0
    Comparison cmp;
    ErrorBound bound;
    DType dtype = c_.dtype;
    if (baseline) {
      bound = error_bound(r, kernel_set, *numerics);
      cmp = compare_accuracy(out, *baseline, gold, bound, dtype, value_scale());
      if (cmp.shape_ok && cmp.nonfinite_rows.empty())
        result_.accuracy.push_back({kernel_set, dtype, cmp.ratio});
    } else {
      cmp = compare_exact(out, gold, value_scale());
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
                                           kernel_set.empty() ? "exact" : kernel_set);
      Finding nf = nonfinite_finding(f, cmp, gold, declared);
      if (g && baseline) nf.first_node = first_divergence(*g, r, kernel_set);
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
               ", golden " + std::to_string(gold.out.data[cmp.worst]);
    if (baseline) f.bound_inputs = bound.inputs;
    if (g && baseline) f.first_node = first_divergence(*g, r, kernel_set);
    result_.findings.push_back(f);
    return false;
  }

  Finding nonfinite_finding(Finding f, const Comparison& cmp, const Golden& gold,
                            const std::optional<std::string>& declared) const {
    f.verdict = declared ? Verdict::known_divergence : Verdict::nan_mismatch;
    int64_t row = cmp.nonfinite_rows[0];
    Shape rows(gold.out.shape.begin(), gold.out.shape.end() - 1);
    f.index = unravel(row, rows);
    f.detail = (declared ? "declared divergence " + *declared + ": " : std::string()) +
               std::to_string(cmp.nonfinite_rows.size()) +
               " query row(s) non-finite where golden is finite, or the reverse; first row " +
               shape_str(f.index) + (gold.fully_masked[row] ? " (fully masked)" : "");
    return f;
  }

  // The first node whose value on the target kernels departs from the
  // exact run by far more than rounding (or in finiteness).
  std::string first_divergence(const Graph& g, size_t r, const std::string& kernel_set) {
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
          if (std::isfinite(e.data[k]) != std::isfinite(t.data[k])) finiteness = true;
          else if (std::isfinite(e.data[k])) diff = std::max(diff, std::fabs(e.data[k] - t.data[k]));
        }
        double rel = diff / std::max(e.max_abs(), 1e-300);
        std::string name = "%" + n.name + " (" + n.op + ")";
        if (finiteness || rel > std::sqrt(unit_roundoff(n.outputs[o].dtype))) return name;
        if (rel > 0 && rel > largest_rel) largest_rel = rel, largest = name;
      }
    }
    return largest;
  }

  void accuracy(const Graph& g0, const Graph& g1, bool rewritten) {
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
          o.error.check = opt_.passes ? Check::accuracy : Check::identity;
          result_.findings.push_back(o.error);
          break;
        }
        if (!judge(o.exec->outputs[0], r, ks.kernels->name(), &*baselines[r], &g1, &numerics)) break;
      }
    }
    if (!claimed)
      result_.findings.push_back(unsupported(std::string("no kernel set of target ") +
                                             target_.name() + " claims dtype " + dtype_name(c_.dtype)));
  }

  // For each pass whose guard kept a node: is the forced rewrite sound at
  // every runtime size? Then the guard is too tight (missed-rewrite).
  // Each kept node is forced on its own (the other passes and nodes follow
  // their guards), then every kept node together: a forced rewrite that
  // refines the entry graph at every runtime size tried is a missed rewrite.
  void completeness(const std::vector<Graph>& stages) {
    if (stages.empty()) return;
    Controls all;
    int kept = 0;
    for (size_t d = 0; d < result_.decisions.size(); ++d) {
      const Decision& dec = result_.decisions[d];
      if (dec.rewrite) continue;
      ++kept;
      all[decision_pass_[d]].forced.insert(dec.node);
      RewriteControl alone;
      alone.forced.insert(dec.node);
      const bool sound = forced_sound(stages[0], {{decision_pass_[d], alone}});
      result_.decisions[d].sound_alone = sound;
      if (sound)
        result_.findings.push_back(finding(
            Verdict::missed_rewrite, Check::completeness,
            "guard kept " + dec.node + " (pass " + dec.pass + ", rule " + dec.deciding_rule +
                "), but its forced rewrite is sound at every runtime size tried"));
    }
    attribute_accepted(stages[0]);
    if (kept > 1 && forced_sound(stages[0], all))
      result_.findings.push_back(finding(Verdict::missed_rewrite, Check::completeness,
                                         "all " + std::to_string(kept) +
                                             " kept nodes forced together: sound at every runtime size tried"));
  }

  // Whether each accepted node's rewrite is sound on its own: the case's
  // soundness verdict when it is the only decision, else the rewrite of
  // that node alone with every other node held (so the gate can sort
  // decisions node by node).
  void attribute_accepted(const Graph& g0) {
    bool case_sound = true;
    for (const auto& f : result_.findings)
      if (is_failure(f.verdict) && (f.check == Check::soundness || f.check == Check::robustness))
        case_sound = false;
    auto& ds = result_.decisions;
    for (size_t d = 0; d < ds.size(); ++d) {
      if (!ds[d].rewrite) continue;
      if (ds.size() == 1) {
        ds[d].sound_alone = case_sound;
        continue;
      }
      Controls alone;
      for (size_t o = 0; o < ds.size(); ++o)
        if (o != d) alone[decision_pass_[o]].held.insert(ds[o].node);
      ds[d].sound_alone = forced_sound(g0, alone);
    }
  }

  bool forced_sound(const Graph& g0, const Controls& controls) {
    std::optional<Graph> forced = apply_passes(g0, controls, nullptr, nullptr);
    if (!forced || !verify_graph(*forced).empty()) return false;
    for (size_t r = 0; r < runs_.size(); ++r) {
      Outcome o = execute(*forced, target_.exact_kernels(), r, true);
      if (!o.exec || !compare_exact(o.exec->outputs[0], entry_refs_[r], value_scale()).within) return false;
    }
    return true;
  }

  const Target& target_;
  const ReferenceModel& ref_;
  const Case& c_;
  const Case meaning_ = target_.meaning(c_);  // the SDPA call the entry graph computes
  CheckOptions opt_;
  ShapeEnv env_;
  std::vector<Assignment> runs_;
  std::vector<CaseTensors> tensors_;
  std::vector<std::map<std::string, Tensor>> inputs_;  // placeholder bindings per run
  std::map<std::pair<size_t, std::string>, ErrorBound> bounds_;
  std::vector<Golden> goldens_;
  std::vector<Golden> entry_refs_;  // the entry graph's exact output at each run
  CaseResult result_;
  std::vector<int> decision_pass_;  // the pass that made each decision
  double value_scale_ = 0.0;
};

}  // namespace

CaseResult run_case(const Target& target, const ReferenceModel& reference, const Case& c,
                    const CheckOptions& options) {
  return CaseChecker(target, reference, c, options).run();
}

}  // namespace sdpa
