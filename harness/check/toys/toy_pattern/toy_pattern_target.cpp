#include "harness/check/toys/toy_pattern/toy_pattern_target.h"

#include <cmath>
#include <set>

#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::toy_pattern {
namespace {

constexpr const char* kSdpa = "aten.scaled_dot_product_attention.default";
constexpr const char* kMatmul = "aten.matmul.default";
constexpr const char* kMulScalar = "aten.mul.Scalar";
constexpr const char* kSoftmax = "aten.softmax.int";
constexpr const char* kTranspose = "aten.transpose.int";

// What the tracer wrote: the call's scale computed in f32.
double f32_scale(const Case& c) { return static_cast<double>(static_cast<float>(c.effective_scale())); }

SymShape swap_last_two(SymShape s) {
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  return s;
}

// matmul(q, kᵀ) -> mul.Scalar(literal) -> softmax(-1) -> matmul(p, v).
Graph pattern_graph(const Case& c) {
  Graph g;
  const DType t = c.dtype;
  ValueRef q = g.placeholder("q", {t, query_shape(c)}), k = g.placeholder("k", {t, key_shape(c)}),
           v = g.placeholder("v", {t, value_shape(c)});
  ValueRef kt = g.call(kTranspose, {k, int64_t{-2}, int64_t{-1}}, {}, {{t, swap_last_two(key_shape(c))}});
  ValueRef s = g.call(kMatmul, {q, kt}, {}, {{t, score_shape(c)}});
  ValueRef x = g.call(kMulScalar, {s, f32_scale(c)}, {}, {{t, score_shape(c)}});
  ValueRef p = g.call(kSoftmax, {x, int64_t{-1}}, {}, {{t, score_shape(c)}});
  g.outputs = {g.call(kMatmul, {p, v}, {}, {{t, output_shape(c)}})};
  return g;
}

// The node an argument reads, when it is a graph value.
const Node* producer(const Graph& g, const Arg& a) {
  const auto* v = std::get_if<ValueRef>(&a);
  return v ? &g.nodes.at(v->node) : nullptr;
}

enum class Recovery { exact, one_ulp_up, sign_lost };

// The pattern's nodes, matched backward from its last matmul.
struct Match {
  const Node *out, *softmax, *mul, *scores, *transpose;
};

std::optional<Match> match(const Graph& g, const Node& n) {
  if (n.op != kMatmul) return std::nullopt;
  Match m{&n, producer(g, n.args[0]), nullptr, nullptr, nullptr};
  if (!m.softmax || m.softmax->op != kSoftmax) return std::nullopt;
  m.mul = producer(g, m.softmax->args[0]);
  if (!m.mul || m.mul->op != kMulScalar || !std::holds_alternative<double>(m.mul->args[1])) return std::nullopt;
  m.scores = producer(g, m.mul->args[0]);
  if (!m.scores || m.scores->op != kMatmul) return std::nullopt;
  m.transpose = producer(g, m.scores->args[1]);
  if (!m.transpose || m.transpose->op != kTranspose) return std::nullopt;
  return m;
}

// Fuses the pattern into aten SDPA with scale = the literal read as f32
// (the ConvertToSDPA recovery of semantics/passes.md §4, without the split).
class FusePatternPass : public Pass {
 public:
  explicit FusePatternPass(Recovery r) : recovery_(r) {}
  std::string name() const override { return "fuse-attention-pattern"; }
  using Pass::run;
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override {
    Result result;
    std::set<std::string> fused;  // interior nodes of rewritten patterns
    std::vector<std::pair<const Node*, Match>> rewrites;
    for (const Node& n : g.nodes)
      if (auto m = match(g, n)) {
        GuardContext guard(env, "%" + n.name);
        guard.rule("pattern", true, "matmul -> mul.Scalar -> softmax -> matmul");
        Decision d = guard.finish();
        d.forced = !d.rewrite && control.rewrites(d);
        result.decisions.push_back(d);
        if (!control.rewrites(d)) continue;
        for (const Node* x : {m->softmax, m->mul, m->scores, m->transpose}) fused.insert(x->name);
        rewrites.push_back({&n, *m});
      }
    GraphRewriter rw(g);
    for (const Node& n : g.nodes) {
      if (fused.count(n.name)) continue;
      const Match* m = nullptr;
      for (const auto& [node, mm] : rewrites)
        if (node == &n) m = &mm;
      if (!m) {
        rw.copy(n);
        continue;
      }
      ValueRef q = rw.map(std::get<ValueRef>(m->scores->args[0]));
      ValueRef k = rw.map(std::get<ValueRef>(m->transpose->args[0]));
      ValueRef v = rw.map(std::get<ValueRef>(n.args[1]));
      double scale = recover(std::get<double>(m->mul->args[1]));
      rw.replace(n, {rw.out().call(kSdpa, {q, k, v, None{}, 0.0, false}, {{"scale", scale}}, n.outputs, "sdpa")});
    }
    result.graph = rw.finish();
    return result;
  }

 private:
  double recover(double literal) const {
    const float f = static_cast<float>(literal);
    switch (recovery_) {
      case Recovery::exact: return f;
      case Recovery::one_ulp_up: return std::nextafter(f, INFINITY);
      case Recovery::sign_lost: return std::fabs(f) == f ? -f : std::fabs(f);
    }
    return f;
  }
  Recovery recovery_;
};

class ToyPatternTarget : public Target {
 public:
  explicit ToyPatternTarget(Options o)
      : options_(std::move(o)),
        pass_(options_.at("mutant") == "recovery-one-ulp"   ? Recovery::one_ulp_up
              : options_.at("mutant") == "recovery-sign"    ? Recovery::sign_lost
                                                            : Recovery::exact),
        kernels_(make_reference_kernels("portable", Numerics::emulated)) {}

  std::string name() const override { return "toy-pattern"; }
  const Options& options() const override { return options_; }
  CaseSpace case_space() const override {
    CaseSpace s;
    s.dtypes = {DType::f32};
    s.bshd_layout = false;
    s.dropout = false;
    s.masks = false;
    return s;
  }
  std::optional<std::string> refuses(const Case& c) const override {
    if (c.dtype != DType::f32 || c.layout != Layout::bhsd || c.mask || c.is_causal || c.dropout_p > 0 ||
        !(c.start_pos == SymExpr(0)))
      return std::string("the traced pattern is an f32 [B, H, L, D] call without mask, causal or dropout");
    if (c.q_heads != c.kv_heads && c.kv_heads != 1)
      return std::string("the traced pattern's matmul broadcasts one kv head or none");
    return std::nullopt;
  }
  Graph entry(const Case& c) const override { return pattern_graph(c); }
  // The pattern computes SDPA with the scale its f32 literal holds; option
  // meaning=case declares the unrounded scale instead (a wrong entry model).
  Case meaning(const Case& c) const override {
    Case m = c;
    if (options_.at("meaning") == "literal") m.scale = f32_scale(c);
    return m;
  }
  std::vector<GraphConstant> constants(const Graph& g) const override {
    std::vector<GraphConstant> out;
    for (const Node& n : g.nodes) {
      if (n.op == kMulScalar) out.push_back({"scale", std::get<double>(n.args[1]), DType::f32, {{n.name, "", 1}}});
      if (n.op == kSdpa)
        if (const Arg* s = n.kwarg("scale"))
          out.push_back({"scale", std::get<double>(*s), DType::f32, {{n.name, "scale"}}});
    }
    return out;
  }
  std::vector<const Pass*> passes() const override { return {&pass_}; }
  std::vector<KernelSetInfo> kernel_sets() const override {
    // Each op rounds to f32; the fused SDPA splits sqrt(scale) into q and k.
    return {{&kernels_, {DType::f32}, "reference kernels in f32",
             [](const Case& c, const Graph& g) {
               KernelNumerics n = KernelNumerics::naive(c.dtype);
               n.fp.split_scale = g.count(kSdpa) > 0;
               return n;
             }}};
  }
  const KernelSet& baseline_kernels() const override { return naive_kernels(); }

 private:
  Options options_;
  FusePatternPass pass_;
  KernelSet kernels_;
};

class ToyPatternFactory : public TargetFactory {
 public:
  std::string name() const override { return "toy-pattern"; }
  std::string description() const override { return "a traced attention pattern fused back into SDPA"; }
  std::vector<OptionSpec> option_specs() const override {
    return {{"guard", {"fuse"}, "fuse", "guard policy: fuse every matched pattern"},
            {"entry", {"pattern"}, "pattern", "entry form: matmul, mul by the scale, softmax, matmul"},
            {"meaning", {"literal", "case"}, "literal",
             "the scale the entry means: its f32 literal, or (wrongly) the case's unrounded scale"},
            {"mutant", {"none", "recovery-one-ulp", "recovery-sign"}, "none",
             "a wrong scale recovery: one f32 ulp up, or the sign flipped"}};
  }
  std::vector<MutantSpec> mutants() const override {
    return {{"recovery-one-ulp", {{"mutant", "recovery-one-ulp"}}, "the recovered scale is one f32 ulp up"},
            {"recovery-sign", {{"mutant", "recovery-sign"}}, "the recovered scale has the wrong sign"}};
  }
  std::unique_ptr<Target> make(const Options& options) const override {
    return std::make_unique<ToyPatternTarget>(options);
  }
};

}  // namespace

std::unique_ptr<TargetFactory> make_factory() { return std::make_unique<ToyPatternFactory>(); }

}  // namespace sdpa::toy_pattern
