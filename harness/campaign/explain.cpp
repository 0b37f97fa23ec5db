#include "harness/campaign/explain.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "harness/check/check.h"
#include "harness/check/compare.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/interpreter.h"
#include "harness/io/json_reader.h"
#include "harness/ir/kernels/reference_kernels.h"
#include "harness/campaign/replay.h"

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

class Explainer {
 public:
  Explainer(const CorpusEntry& e, const Target& t, const ReferenceModel& r, CheckOptions opt)
      : e_(e), c_(e.c), target_(t), ref_(r), opt_(opt), runs_(c_.runs()) {}

  std::string run() {
    opt_.keep_graphs = true;
    result_ = run_case(target_, ref_, c_, opt_);
    headline();
    o_ << "\n== The call\n" << describe_case(c_);
    passes();
    runs();
    node_by_node();
    bound();
    return o_.str();
  }

 private:
  const Finding* primary() const { return result_.primary(); }

  void headline() {
    o_ << "verdict: " << verdict_name(result_.verdict) << " (expect " << e_.expect << ")\n";
    const Finding* f = primary();
    if (!f) return;
    o_ << "finding: " << verdict_name(f->verdict) << " [" << check_name(f->check) << "]"
       << (f->kernel_set.empty() ? "" : " kernels=" + f->kernel_set) << " at run " << f->run << " ("
       << assignment_str(f->sizes) << "): " << f->detail << "\n";
    if (!f->first_node.empty()) o_ << "diverging node: " << f->first_node << "\n";
    for (const auto& fact : target_.failure_facts(c_))
      o_ << "violated fact: " << fact.rule << ": " << fact.detail << "\n";
    for (const auto& a : f->violated_assumptions) o_ << "violated assumption: " << a << "\n";
    if (f->error != 0.0 || f->bound != 0.0)
      o_ << "error: " << number(f->error) << " = " << number(f->error_ulps) << " ulp of "
         << dtype_name(c_.dtype) << ", bound " << number(f->bound) << "\n";
  }

  void passes() {
    o_ << "\n== Passes\n";
    Graph g = target_.entry(c_);
    o_ << "entry graph:\n" << print_graph(g);
    if (!opt_.passes) {
      o_ << "(passes off: identity self-check)\n";
      final_ = g;
      return;
    }
    ShapeEnv env = c_.shape_env();
    for (const Pass* p : target_.passes()) {
      Pass::Result r;
      try {
        r = p->run(g, env, false);
      } catch (const std::exception& ex) {
        o_ << "pass " << p->name() << " raised: " << ex.what() << "\n";
        final_.reset();
        return;
      }
      for (const auto& d : r.decisions) decision(p->name(), d);
      g = std::move(r.graph);
      o_ << "after " << p->name() << ":\n" << print_graph(g);
    }
    final_ = g;
  }

  void decision(const std::string& pass, const Decision& d) {
    o_ << "pass " << pass << " on " << d.node << ": " << (d.rewrite ? "rewrite" : "keep")
       << " (deciding rule " << d.deciding_rule << ")\n";
    for (const auto& r : d.rules)
      o_ << "  rule " << r.rule << ": " << (r.passed ? "holds" : "FAILS") << (r.detail.empty() ? "" : " — " + r.detail) << "\n";
    for (const auto& a : d.assumptions)
      o_ << "  assumed on the export hint: " << a.fact.str() << " (rule " << a.rule << ")\n";
  }

  std::optional<Tensor> execute(const KernelSet& k, size_t r, std::string& error, bool keep,
                                Execution* values = nullptr) {
    CaseTensors t = make_case_tensors(c_, runs_[r]);
    try {
      Execution ex = interpret(*final_, k, target_.inputs(c_, t), {runs_[r], c_.data.seed}, keep);
      Tensor out = ex.outputs[0];
      if (values) *values = std::move(ex);
      return out;
    } catch (const std::exception& ex) {
      error = ex.what();
      return std::nullopt;
    }
  }

  void runs() {
    o_ << "\n== Results at each runtime size\n";
    if (!final_) return;
    for (size_t r = 0; r < runs_.size(); ++r) {
      CaseTensors t = make_case_tensors(c_, runs_[r]);
      Golden g = ref_.golden(c_, t, runs_[r]);
      int masked = 0;
      for (auto m : g.fully_masked) masked += m;
      o_ << "run " << r << " (" << assignment_str(runs_[r]) << "): golden max |out| "
         << number(g.out.max_abs()) << ", " << masked << " fully masked row(s)\n";
      std::string error;
      if (auto out = execute(target_.exact_kernels(), r, error, false)) {
        Comparison cmp = compare_exact(*out, g, t.v.max_abs());
        o_ << "  exact kernels: max |error| " << number(cmp.max_abs) << " (bound " << number(cmp.bound)
           << "), " << cmp.nonfinite_rows.size() << " row(s) differ in finiteness\n";
      } else {
        o_ << "  exact kernels: " << error << "\n";
      }
      for (const auto& ks : target_.kernel_sets()) {
        if (std::find(ks.dtypes.begin(), ks.dtypes.end(), c_.dtype) == ks.dtypes.end()) continue;
        if (auto out = execute(*ks.kernels, r, error, false)) {
          double worst = 0;
          for (int64_t i = 0; i < out->numel() && out->shape == g.out.shape; ++i)
            if (std::isfinite(out->data[i]) && std::isfinite(g.out.data[i]))
              worst = std::max(worst, std::fabs(out->data[i] - g.out.data[i]));
          o_ << "  kernels " << ks.kernels->name() << ": max |error| " << number(worst) << " = "
             << number(worst / ulp(c_.dtype, g.out.max_abs())) << " ulp at max |golden|\n";
        } else {
          o_ << "  kernels " << ks.kernels->name() << ": " << error << "\n";
        }
      }
    }
  }

  // The rewritten graph on the exact kernels and on the target's first
  // kernel set for the case dtype, value by value.
  void node_by_node() {
    if (!final_) return;
    const KernelSetInfo* ks = nullptr;
    auto sets = target_.kernel_sets();
    for (const auto& s : sets)
      if (!ks && std::find(s.dtypes.begin(), s.dtypes.end(), c_.dtype) != s.dtypes.end()) ks = &s;
    if (!ks) return;
    size_t r = primary() ? static_cast<size_t>(primary()->run) : 0;
    o_ << "\n== Node by node: exact against " << ks->kernels->name() << ", run " << r << "\n";
    Execution exact, got;
    std::string e1, e2;
    bool ok_exact = execute(target_.exact_kernels(), r, e1, true, &exact).has_value();
    bool ok_got = execute(*ks->kernels, r, e2, true, &got).has_value();
    if (!ok_exact || !ok_got) {
      o_ << (ok_exact ? "" : "exact: " + e1 + "\n") << (ok_got ? "" : ks->kernels->name() + ": " + e2 + "\n");
      return;
    }
    bool reported = false;
    for (size_t i = 0; i < final_->nodes.size(); ++i) {
      const Node& n = final_->nodes[i];
      if (n.op == "placeholder" || n.op == "get_attr" || exact.values[i].empty()) continue;
      const Tensor &a = exact.values[i][0], &b = got.values[i][0];
      double diff = 0;
      bool finiteness = false;
      for (int64_t k = 0; k < a.numel() && a.shape == b.shape; ++k) {
        if (std::isfinite(a.data[k]) != std::isfinite(b.data[k])) finiteness = true;
        else if (std::isfinite(a.data[k])) diff = std::max(diff, std::fabs(a.data[k] - b.data[k]));
      }
      double rel = diff / std::max(a.max_abs(), 1e-300);
      bool diverges = finiteness || rel > std::sqrt(unit_roundoff(n.outputs[0].dtype));
      o_ << "  %" << std::left << std::setw(22) << n.name << std::setw(44) << n.op << " "
         << print_value_info(n.outputs[0]) << "  max|diff| " << number(diff) << " rel " << number(rel)
         << (finiteness ? "  NON-FINITE" : "") << (diverges && !reported ? "  <- first divergence" : "") << "\n";
      reported = reported || diverges;
    }
    if (!reported)
      o_ << "  the two runs agree node by node: any difference from golden is the rewrite's, not the kernels'\n";
  }

  void bound() {
    const Finding* f = primary();
    o_ << "\n== Error bound\n";
    if (f && !f->bound_inputs.is_null()) {
      o_ << f->bound_inputs.dump(2) << "\n";
      return;
    }
    size_t r = f ? static_cast<size_t>(f->run) : 0;
    CaseTensors t = make_case_tensors(c_, runs_[r]);
    Golden g = ref_.golden(c_, t, runs_[r]);
    o_ << ref_.bound(c_, t, g, c_.dtype).inputs.dump(2) << "\n";
  }

  const CorpusEntry& e_;
  const Case& c_;
  const Target& target_;
  const ReferenceModel& ref_;
  CheckOptions opt_;
  std::vector<Assignment> runs_;
  CaseResult result_;
  std::optional<Graph> final_;
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
      << pattern_name(c.mask->pattern) << " (param " << c.mask->param << ")"
      << (c.mask->dtype == DType::b8 ? ", false drops" : std::string(", fill ") + fill_name(c.mask->fill)) << "\n";
  else
    o << "  no mask" << (c.is_causal ? ", is_causal (top-left)" : "") << "\n";
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

}  // namespace sdpa
