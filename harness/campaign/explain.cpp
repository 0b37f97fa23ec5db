#include "harness/campaign/explain.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "harness/campaign/replay.h"
#include "harness/check/check.h"
#include "harness/check/compare.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/interpreter.h"
#include "harness/ir/kernels/reference_kernels.h"
#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

std::string assignment_str(const Assignment& a) {
  if (a.empty()) return "static sizes";
  std::string s;
  for (const auto& [k, v] : a) s += (s.empty() ? "" : ", ") + k + " = " + std::to_string(v);
  return s;
}

std::string number(double x) {
  std::ostringstream o;
  o << std::setprecision(6) << x;
  return o.str();
}

// How far `out` is from `ref` element by element, non-finite elements
// counted: an element finite in one and not in the other is an infinite
// error, never skipped.
struct ElementError {
  bool shape_ok = true;
  int64_t finiteness = 0;  // elements finite in exactly one of the two
  double max_abs = 0.0;    // over elements finite in both
  std::string str() const {
    if (!shape_ok) return "shapes differ";
    std::string s = "max |error| " + (finiteness ? std::string("inf") : number(max_abs));
    if (finiteness)
      s += " (" + std::to_string(finiteness) + " element(s) differ in finiteness; over elements finite in both " +
           number(max_abs) + ")";
    return s;
  }
};

ElementError element_error(const Tensor& out, const Tensor& ref) {
  ElementError e;
  e.shape_ok = out.shape == ref.shape;
  for (int64_t i = 0; e.shape_ok && i < out.numel(); ++i) {
    const double a = out.data[i], b = ref.data[i];
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isfinite(a) != std::isfinite(b) || (!std::isfinite(a) && a != b)) ++e.finiteness;
    else if (std::isfinite(a)) e.max_abs = std::max(e.max_abs, std::fabs(a - b));
  }
  return e;
}

class Explainer {
 public:
  Explainer(const CorpusEntry& e, const Target& t, const ReferenceModel& r, CheckOptions opt)
      : e_(e), c_(e.c), meaning_(t.meaning(e.c)), target_(t), ref_(r), opt_(opt), runs_(c_.runs()) {}

  std::string run() {
    opt_.keep_graphs = true;
    result_ = run_case(target_, ref_, c_, opt_);
    finding_ = result_.primary();
    choose_kernel_set();
    headline();
    o_ << "\n== The call\n" << describe_case(c_);
    passes();
    if (result_.rewritten_graph && result_.entry_graph) {
      prepare_runs();
      runs();
      node_by_node();
    }
    bound();
    return o_.str();
  }

 private:
  // The kernel set the finding names; without one (a soundness finding, or
  // none), the target's first set for the case dtype.
  void choose_kernel_set() {
    for (const auto& ks : target_.kernel_sets()) {
      const bool claims = std::find(ks.dtypes.begin(), ks.dtypes.end(), c_.dtype) != ks.dtypes.end();
      if (finding_ && ks.kernels->name() == finding_->kernel_set) kernels_ = ks.kernels;
      if (!first_ && claims) first_ = ks.kernels;
    }
  }

  void headline() {
    o_ << "verdict: " << verdict_name(result_.verdict) << " (expect " << e_.expect << ")\n";
    if (const Finding* f = finding_) {
      o_ << "finding: " << verdict_name(f->verdict) << " [" << check_name(f->check) << "] on "
         << (f->kernel_set.empty() ? "the exact kernels" : "kernel set " + f->kernel_set) << ", run " << f->run
         << " (" << assignment_str(f->sizes) << "): " << f->detail << "\n";
      if (!f->first_node.empty()) o_ << "diverging node: " << f->first_node << "\n";
    }
    facts();
    if (const Finding* f = finding_) {
      for (const auto& a : f->violated_assumptions) o_ << "violated assumption: " << a << "\n";
      if (f->error != 0.0 || f->bound != 0.0)
        o_ << "error: " << number(f->error) << " = " << number(f->error_ulps) << " ulp of "
           << dtype_name(c_.dtype) << ", bound " << number(f->bound) << "\n";
    }
  }

  // The facts the case breaks, from the target's specification, each with
  // what the guard under test decided for the rule of the same name.
  void facts() {
    for (const auto& fact : target_.failure_facts(c_)) {
      o_ << "violated fact: " << fact.rule << ": " << fact.detail;
      const RuleOutcome* guard = nullptr;
      for (const auto& d : result_.decisions)
        for (const auto& r : d.rules)
          if (!guard && r.rule == fact.rule) guard = &r;
      if (!guard) o_ << " (the guard did not evaluate " << fact.rule << ")\n";
      else
        o_ << " (the guard decided: " << (guard->passed ? "holds" : "FAILS")
           << (guard->detail.empty() ? "" : ", " + guard->detail)
           << (guard->passed ? "; the guard disagrees with the specification" : "") << ")\n";
    }
  }

  void passes() {
    o_ << "\n== Passes (as the checker ran them)\n";
    o_ << "entry graph:\n" << result_.graph_before;
    if (!opt_.passes) o_ << "(passes off: identity self-check)\n";
    for (const auto& d : result_.decisions) decision(d);
    if (!result_.rewritten_graph) {
      o_ << "(no rewritten graph: " << (finding_ ? finding_->detail : std::string("the checker stopped earlier"))
         << ")\n";
      return;
    }
    o_ << "after the passes:\n" << result_.graph_after;
  }

  void decision(const Decision& d) {
    o_ << "pass " << (d.pass.empty() ? std::string("?") : d.pass) << " on " << d.node << ": "
       << (d.rewrite ? "rewrite" : "keep") << (d.forced ? " (forced)" : "") << " (deciding rule "
       << d.deciding_rule << ")\n";
    for (const auto& r : d.rules)
      o_ << "  rule " << r.rule << ": " << (r.passed ? "holds" : "FAILS")
         << (r.detail.empty() ? "" : " — " + r.detail) << "\n";
    for (const auto& a : d.assumptions)
      o_ << "  assumed on the export hint: " << a.fact.str() << " (rule " << a.rule << ")\n";
    if (!d.refuted_at.empty())
      o_ << "  " << (d.rewrite ? "its rewrite" : "its forced rewrite")
         << " refines the entry graph at every runtime size but not at " << d.refuted_at
         << (d.rewrite ? "" : ": the guard is right to keep it") << "\n";
    else if (!d.rewrite && d.sound_alone)
      o_ << "  its forced rewrite refines the entry graph at every runtime size and every proof size, on both data "
            "draws: a missed rewrite\n";
  }

  // Tensors, goldens and the value scale as the checker computes them.
  void prepare_runs() {
    composite_ = target_.composite(c_);
    for (const auto& at : runs_) {
      tensors_.push_back(composite_ ? composite_->sdpa_tensors(at) : make_case_tensors(c_, at));
      value_scale_ = std::max(value_scale_, composite_ ? composite_->scale(tensors_.back()) : tensors_.back().v.max_abs());
    }
    value_scale_ /= 1.0 - c_.dropout_p;
    for (size_t r = 0; r < runs_.size(); ++r) {
      sdpa_goldens_.push_back(ref_.golden(meaning_, tensors_[r], runs_[r]));
      goldens_.push_back(composite_ ? composite_golden(*composite_, sdpa_goldens_.back()) : sdpa_goldens_.back());
    }
  }

  // The bound the checker holds a set to at run r, from its numerics (and,
  // for a composite, carried through the module's graph g).
  ErrorBound bound_at(size_t r, const KernelNumerics& n, const Graph& g) const {
    ErrorBound b = ref_.bound(meaning_, tensors_[r], sdpa_goldens_[r], n);
    return composite_ ? composite_->bound(b, tensors_[r], sdpa_goldens_[r], g) : b;
  }

  std::optional<Execution> execute(const Graph& g, const KernelSet& k, size_t r, bool keep, std::string& error) {
    try {
      return interpret(g, k, target_.inputs(c_, tensors_[r]), {runs_[r], c_.data.seed}, keep);
    } catch (const std::exception& ex) {
      error = ex.what();
      return std::nullopt;
    }
  }

  // At each run: the entry graph on the exact kernels against golden (the
  // entry check), the rewritten graph on the exact kernels against the
  // entry graph's exact output (soundness as refinement), and each kernel
  // set against golden with the baseline: the comparisons the checker makes.
  void runs() {
    o_ << "\n== Results at each runtime size\n";
    const Graph &g0 = *result_.entry_graph, &g1 = *result_.rewritten_graph;
    for (size_t r = 0; r < runs_.size(); ++r) {
      const Golden& gold = goldens_[r];
      int masked = 0;
      for (auto m : gold.fully_masked) masked += m;
      o_ << "run " << r << " (" << assignment_str(runs_[r]) << "): golden max |out| " << number(gold.out.max_abs())
         << ", " << masked << " fully masked row(s)\n";
      std::string error;
      auto entry = execute(g0, target_.exact_kernels(), r, false, error);
      if (!entry) {
        o_ << "  entry graph, exact kernels: " << error << "\n";
        continue;
      }
      Comparison ecmp = compare_exact(entry->outputs[0], gold, value_scale_);
      o_ << "  entry graph, exact kernels, against golden: " << element_error(entry->outputs[0], gold.out).str()
         << ", bound " << number(ecmp.bound) << ": " << (ecmp.within ? "within" : "OUTSIDE") << "\n";
      Golden ref = gold;  // the entry's exact output is the reference the rewrite must refine
      ref.out = entry->outputs[0];
      if (auto ex = execute(g1, target_.exact_kernels(), r, false, error)) {
        Comparison cmp = compare_exact(ex->outputs[0], ref, value_scale_);
        o_ << "  rewritten graph, exact kernels, against the entry graph: "
           << element_error(ex->outputs[0], ref.out).str() << ", bound " << number(cmp.bound) << ": "
           << (cmp.within ? "within" : "OUTSIDE") << "\n";
      } else {
        o_ << "  rewritten graph, exact kernels: " << error << "\n";
      }
      auto baseline = execute(g0, target_.baseline_kernels(), r, false, error);
      for (const auto& ks : target_.kernel_sets()) {
        if (std::find(ks.dtypes.begin(), ks.dtypes.end(), c_.dtype) == ks.dtypes.end()) continue;
        o_ << "  kernels " << ks.kernels->name() << ": ";
        auto ex = execute(g1, *ks.kernels, r, false, error);
        if (!ex || !baseline) {
          o_ << (baseline ? "" : "baseline: ") << error << "\n";
          continue;
        }
        const Tensor& out = ex->outputs[0];
        // The bound the checker holds this set to: from its numerics declaration.
        const KernelNumerics numerics = ks.numerics ? ks.numerics(c_, g1) : KernelNumerics{};
        if (numerics.kind == KernelNumerics::Kind::none) {
          o_ << "no numerics model: accuracy is unsupported\n";
          continue;
        }
        ErrorBound bound = bound_at(r, numerics, g1);
        Comparison cmp = compare_accuracy(out, baseline->outputs[0], gold, bound, c_.dtype);
        ElementError e = element_error(out, gold.out);
        o_ << e.str();
        if (e.shape_ok && !e.finiteness && cmp.worst >= 0)
          o_ << " = " << number(e.max_abs / ulp(c_.dtype, gold.out.data[cmp.worst])) << " ulp";
        o_ << ", " << cmp.nonfinite_rows.size() << " row(s) differ in finiteness, |C - G| / bound "
           << number(cmp.ratio) << ": " << (cmp.within ? "within" : "OUTSIDE") << "\n";
      }
    }
  }

  // The checker's rewritten graph on the exact kernels and on the kernel
  // set the finding names, value by value: a node whose values differ in
  // finiteness, or by more than sqrt(u) of its dtype relative to its
  // largest exact value, diverges.
  void node_by_node() {
    const KernelSet* ks = kernels_ ? kernels_ : first_;
    if (!ks) return;
    size_t r = finding_ ? static_cast<size_t>(finding_->run) : 0;
    o_ << "\n== Node by node: exact against " << ks->name() << ", run " << r << "\n";
    if (!kernels_)
      o_ << "  (the finding names no kernel set: " << ks->name() << " is the target's first for "
         << dtype_name(c_.dtype) << ")\n";
    const Graph& g = *result_.rewritten_graph;
    std::string e1, e2;
    auto exact = execute(g, target_.exact_kernels(), r, true, e1);
    auto got = execute(g, *ks, r, true, e2);
    if (!exact || !got) {
      o_ << (exact ? "" : "  exact: " + e1 + "\n") << (got ? "" : "  " + ks->name() + ": " + e2 + "\n");
      return;
    }
    std::string first;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      if (n.op == "placeholder" || n.op == "get_attr") continue;
      for (size_t o = 0; o < n.outputs.size() && o < exact->values[i].size() && o < got->values[i].size(); ++o) {
        const Tensor &a = exact->values[i][o], &b = got->values[i][o];
        ElementError e = element_error(b, a);
        const double rel = e.max_abs / std::max(a.max_abs(), 1e-300);
        const bool diverges = !e.shape_ok || e.finiteness > 0 || rel > std::sqrt(unit_roundoff(n.outputs[o].dtype));
        const std::string name = "%" + n.name + " (" + n.op + ")";
        o_ << "  %" << std::left << std::setw(22) << n.name << std::setw(40) << n.op << " "
           << print_value_info(n.outputs[o]) << "  " << e.str() << ", rel " << number(rel)
           << (diverges && first.empty() ? "  <- first divergence" : "") << "\n";
        if (diverges && first.empty()) first = name;
      }
    }
    if (first.empty())
      o_ << "  no node of " << ks->name() << " departs from the exact run (by sqrt(u) of its dtype or in finiteness)\n";
    else
      o_ << "first diverging node on " << ks->name() << ": " << first << "\n";
  }

  void bound() {
    o_ << "\n== Error bound\n";
    if (finding_ && !finding_->bound_inputs.is_null()) {
      o_ << finding_->bound_inputs.dump(2) << "\n";
      return;
    }
    if (goldens_.empty()) {
      o_ << "(no golden output at this stage)\n";
      return;
    }
    size_t r = finding_ ? static_cast<size_t>(finding_->run) : 0;
    // The first kernel set claiming the dtype, with its declared numerics.
    for (const auto& ks : target_.kernel_sets()) {
      if (!result_.entry_graph) break;
      if (std::find(ks.dtypes.begin(), ks.dtypes.end(), c_.dtype) == ks.dtypes.end() || !ks.numerics) continue;
      const Graph& g = result_.rewritten_graph ? *result_.rewritten_graph : *result_.entry_graph;
      const KernelNumerics n = ks.numerics(c_, g);
      if (n.kind == KernelNumerics::Kind::none) continue;
      o_ << "kernel set " << ks.kernels->name() << ":\n"
         << bound_at(r, n, g).inputs().dump(2) << "\n";
      return;
    }
    o_ << "(no kernel set with a numerics model claims " << dtype_name(c_.dtype) << ")\n";
  }

  const CorpusEntry& e_;
  const Case& c_;
  const Case meaning_;  // the SDPA call the entry graph computes (the oracles' input)
  const Target& target_;
  const ReferenceModel& ref_;
  CheckOptions opt_;
  std::vector<Assignment> runs_;
  CaseResult result_;
  const Finding* finding_ = nullptr;
  const KernelSet* kernels_ = nullptr;  // named by the finding
  const KernelSet* first_ = nullptr;    // the first set claiming the case dtype
  std::vector<CaseTensors> tensors_;
  std::vector<Golden> goldens_;  // the module's, for a composite
  std::optional<Composite> composite_;
  std::vector<Golden> sdpa_goldens_;
  double value_scale_ = 0.0;
  std::ostringstream o_;
};

}  // namespace

std::string describe_case(const Case& c) {
  std::ostringstream o;
  o << "scaled_dot_product_attention in " << dtype_name(c.dtype) << ", layout " << layout_name(c.layout) << "\n";
  o << "  q " << shape_str(query_shape(c)) << ", k " << shape_str(key_shape(c)) << ", v "
    << shape_str(value_shape(c)) << " -> out " << shape_str(output_shape(c)) << "\n";
  o << "  heads: Hq " << c.q_heads << ", Hkv " << c.kv_heads;
  if (c.q_heads == c.kv_heads) o << " (MHA)";
  else if (c.kv_heads == 1) o << " (MQA" << (c.enable_gqa ? "" : ", broadcast without enable_gqa") << ")";
  else o << " (GQA, group " << c.q_heads / c.kv_heads << ": head h reads kv head h / " << c.q_heads / c.kv_heads << ")";
  o << (c.enable_gqa ? ", enable_gqa" : "") << "\n";
  o << "  Lq " << c.q_len.str() << ", Lkv " << c.kv_len.str() << ", E " << c.head_dim << ", Ev " << c.value_dim;
  if (!(c.start_pos == SymExpr(0))) o << ", start_pos " << c.start_pos.str();
  o << "\n";
  for (const auto& [name, s] : c.symbols)
    o << "  symbol " << name << ": " << (s.hint ? "hint " + std::to_string(*s.hint) : std::string("unbacked (no hint)"))
      << ", range [" << s.min << ", " << s.max << "]\n";
  if (!c.runtime.empty()) {
    o << "  runs at:";
    for (const auto& a : c.runtime) o << " {" << assignment_str(a) << "}";
    o << "\n";
  }
  if (c.mask)
    o << "  mask: " << dtype_name(c.mask->dtype) << shape_str(c.mask->shape) << ", pattern "
      << pattern_name(c.mask->pattern) << " (param " << c.mask->param
      << (c.mask->pattern == MaskPattern::block_sparse
              ? ", blocks of " + std::to_string(c.mask->block_rows) + " rows x " + std::to_string(c.mask->block_keys) + " keys"
              : std::string())
      << ")" << (c.mask->dtype == DType::b8 ? ", false drops" : std::string(", fill ") + fill_name(c.mask->fill)) << "\n";
  else
    o << "  no mask"
      << (c.is_causal ? std::string(", is_causal (") + alignment_name(c.causal_alignment) + ")" : "") << "\n";
  if (!c.variant.empty()) o << "  entry variant: " << c.variant << "\n";
  o << "  dropout_p " << c.dropout_p << ", scale "
    << (c.scale ? number(*c.scale) : "default 1/sqrt(E) = " + number(c.effective_scale())) << "\n";
  o << "  data: " << distribution_name(c.data.distribution) << " x " << c.data.magnitude << ", seed "
    << c.data.seed << "\n";
  return o.str();
}

std::string explain_entry(const CorpusEntry& e, const TargetRegistry& registry,
                          const ReferenceModel& reference) {
  auto [options, check] = entry_options(e);
  auto target = registry.make(e.target, options);
  return Explainer(e, *target, reference, check).run();
}

std::optional<std::string> explain_worker_death(const CorpusEntry& e, const std::string& file,
                                                const TargetRegistry& registry, const ReferenceModel& reference,
                                                IsolatedCases& isolated) {
  ReplayOutcome o = replay_entry(e, registry, reference, false, &isolated);
  if (!isolated.last_died()) return std::nullopt;
  const Finding* f = o.result.primary();
  std::ostringstream out;
  out << "verdict: " << verdict_name(o.result.verdict) << " (the file expects " << e.expect << ")\n"
      << "  " << (f ? f->detail : std::string()) << "\n"
      << "The case ended the worker process that ran it, so it is not taken apart node by node:\n"
      << "in this process it would end sdpacheck the same way. `sdpacheck repro " << file
      << " --gtest` writes a test that runs it under a debugger; `sdpacheck explain --in-process` takes it\n"
      << "apart here anyway.\n";
  return out.str();
}

}  // namespace sdpa
