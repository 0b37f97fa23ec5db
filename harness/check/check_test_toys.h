#pragma once
/// Toy targets and oracles for the check pipeline's tests (check_test.cpp,
/// sample_test.cpp): an SDPA entry graph, a pass that rewrites it into itself
/// followed by a chosen extra op (or raises), a golden from the exact
/// reference kernel, and a module around the call (a composite).
#include <cmath>
#include <functional>
#include <optional>
#include <stdexcept>

#include "harness/check/check.h"
#include "harness/ir/interpreter.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::check_toys {

inline constexpr const char* kSdpa = "aten.scaled_dot_product_attention.default";

inline Case toy_case() {
  Case c;
  c.dtype = DType::f64;
  c.q_heads = c.kv_heads = 1;
  c.q_len = 2;
  c.kv_len = 3;
  c.head_dim = 4;
  c.value_dim = 5;
  c.data.seed = 17;
  return c;
}

// Golden from the exact reference kernel; a huge error bound; optionally a
// planted disagreement between "oracles".
class ToyReference : public ReferenceModel {
 public:
  explicit ToyReference(bool disagree) : disagree_(disagree) {}
  std::string name() const override { return "toy"; }
  Golden golden(const Case& c, const CaseTensors& t, const Assignment& at) const override {
    Graph g;
    ValueRef q = g.placeholder("q", {c.dtype, query_shape(c)}), k = g.placeholder("k", {c.dtype, key_shape(c)}),
             v = g.placeholder("v", {c.dtype, value_shape(c)});
    g.outputs = {g.call(kSdpa, {q, k, v, None{}, 0.0, false}, {}, {{c.dtype, output_shape(c)}})};
    Golden out;
    out.out = interpret(g, exact_kernels(), {{"q", t.q}, {"k", t.k}, {"v", t.v}}, {at, c.data.seed}).outputs[0];
    out.fully_masked.assign(static_cast<size_t>(out.out.numel() / c.value_dim), 0);
    if (disagree_) out.disagreement = "planted";
    return out;
  }
  ErrorBound bound(const Case&, const CaseTensors&, const Golden& g,
                   const KernelNumerics&) const override {
    ErrorBound b;
    b.row_bound.assign(g.fully_masked.size(), 1.0);
    b.row_typical = b.row_bound;
    return b;
  }

 private:
  bool disagree_;
};

using Rewrite = std::function<ValueRef(Graph& out, ValueRef sdpa_output)>;

enum class Raise { no, error, unsupported };

// Rewrites the SDPA node into itself followed by `extra` (or raises).
class ToyPass : public Pass {
 public:
  ToyPass(Rewrite extra, Raise raises) : extra_(std::move(extra)), raises_(raises) {}
  std::string name() const override { return "toy"; }
  using Pass::run;
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl&) const override {
    if (raises_ == Raise::error) throw std::runtime_error("toy pass failed");
    if (raises_ == Raise::unsupported) throw PassUnsupported("Mask rank is not 2");
    Result r;
    GraphRewriter rw(g);
    for (const Node& n : g.nodes) {
      if (n.op != kSdpa) {
        rw.copy(n);
        continue;
      }
      GuardContext guard(env, "%" + n.name);
      r.decisions.push_back(guard.finish());
      ValueRef same = rw.copy(n);
      rw.replace(n, {extra_ ? extra_(rw.out(), same) : same});
    }
    r.graph = rw.finish();
    return r;
  }

 private:
  Rewrite extra_;
  Raise raises_;
};

class ToyTarget : public Target {
 public:
  ToyTarget(Rewrite extra, Raise raises, bool broken_invariant)
      : pass_(std::move(extra), raises), broken_invariant_(broken_invariant) {}
  std::string name() const override { return "toy"; }
  const Options& options() const override { return options_; }
  CaseSpace case_space() const override { return {}; }
  Graph entry(const Case& c) const override {
    Graph g;
    ValueRef q = g.placeholder("q", {c.dtype, query_shape(c)}), k = g.placeholder("k", {c.dtype, key_shape(c)}),
             v = g.placeholder("v", {c.dtype, value_shape(c)});
    g.outputs = {g.call(kSdpa, {q, k, v, None{}, 0.0, false}, {}, {{c.dtype, output_shape(c)}})};
    return g;
  }
  std::vector<const Pass*> passes() const override { return {&pass_}; }
  std::vector<KernelSetInfo> kernel_sets() const override {
    return {{&naive_kernels(), {DType::f64}, "naive",
             [](const Case&, const Graph&) { return KernelNumerics::naive(DType::f64); }}};
  }
  const KernelSet& baseline_kernels() const override { return naive_kernels(); }
  std::vector<std::string> invariants(const Case&, const Graph&, const Graph&) const override {
    if (broken_invariant_) return {"a node the rewrite must remove is left"};
    return {};
  }
  Violations violations(const Case& c, const Graph& before, const Graph& after) const override {
    Violations v{invariants(c, before, after), {}};
    if (kernel_breach)
      v.kernel.push_back(
          {"naive", "%sdpa (" + std::string(kSdpa) + ")", "stage %sdpa: output[0] = 1, its reference gives 2"});
    return v;
  }
  bool kernel_breach = false;  // a kernel stage breach on every rewritten graph

 private:
  Options options_;
  ToyPass pass_;
  bool broken_invariant_;
};

// ToyReference with its disagreement found by a second oracle that runs
// only when asked (cross_check), counted.
class TwoOracleReference : public ToyReference {
 public:
  explicit TwoOracleReference(bool disagree) : ToyReference(false), disagree_(disagree) {}
  Golden golden(const Case& c, const CaseTensors& t, const Assignment& at) const override {
    Golden g = unchecked_golden(c, t, at);
    cross_check(c, t, at, g);
    return g;
  }
  Golden unchecked_golden(const Case& c, const CaseTensors& t, const Assignment& at) const override {
    Golden g = ToyReference::golden(c, t, at);
    g.cross_checked = false;
    return g;
  }
  void cross_check(const Case&, const CaseTensors&, const Assignment&, Golden& g) const override {
    ++cross_checks;
    if (disagree_) g.disagreement = "planted";
    g.cross_checked = true;
  }
  mutable int cross_checks = 0;

 private:
  bool disagree_;
};

inline CheckOptions sampled(int64_t n) {
  CheckOptions o;
  o.oracle_sample = n;
  return o;
}

// A module around the call: the entry graph scales the SDPA output by 2
// (aten.mul.Scalar). Its composite tells the harness so; without one, or
// with a wrong output map, the entry graph differs from the golden.
class ScaledToyTarget : public Target {
 public:
  explicit ScaledToyTarget(std::optional<double> composite_factor, Rewrite extra = nullptr, Raise raises = Raise::no)
      : factor_(composite_factor), pass_(std::move(extra), raises) {}
  std::string name() const override { return "toy-module"; }
  const Options& options() const override { return options_; }
  CaseSpace case_space() const override { return {}; }
  Graph entry(const Case& c) const override {
    Graph g;
    ValueRef q = g.placeholder("q", {c.dtype, query_shape(c)}), k = g.placeholder("k", {c.dtype, key_shape(c)}),
             v = g.placeholder("v", {c.dtype, value_shape(c)});
    ValueRef a = g.call(kSdpa, {q, k, v, None{}, 0.0, false}, {}, {{c.dtype, output_shape(c)}});
    g.outputs = {g.call("aten.mul.Scalar", {a, 2.0}, {}, {{c.dtype, output_shape(c)}})};
    return g;
  }
  std::optional<Composite> composite(const Case& c) const override {
    if (!factor_) return std::nullopt;
    Composite m;
    m.sdpa_tensors = [c](const Assignment& at) { return make_case_tensors(c, at); };
    m.output = [f = *factor_](Tensor a) {
      for (double& x : a.data) x *= f;
      return a;
    };
    m.bound = [](ErrorBound b, const CaseTensors&, const Golden&, const Graph&) {
      for (double& x : b.row_bound) x *= 2;
      for (double& x : b.row_typical) x *= 2;
      return b;
    };
    m.rows_of = [](int64_t row) { return std::vector<int64_t>{row}; };
    m.scale = [f = *factor_](const CaseTensors& t) { return std::fabs(f) * t.v.max_abs(); };
    return m;
  }
  std::vector<const Pass*> passes() const override { return {&pass_}; }
  std::vector<KernelSetInfo> kernel_sets() const override {
    return {{&naive_kernels(), {DType::f64}, "naive",
             [](const Case&, const Graph&) { return KernelNumerics::naive(DType::f64); }}};
  }
  const KernelSet& baseline_kernels() const override { return naive_kernels(); }

 private:
  Options options_;
  std::optional<double> factor_;
  ToyPass pass_;
};

}  // namespace sdpa::check_toys
