#include "harness/check/toys/toy_int8/toy_int8_target.h"

#include <cmath>

#include "backends/common/sdpa_entry.h"
#include "harness/check/toys/toy_int8/int8_sdpa_kernel.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::toy_int8 {
namespace {

// The quantization the pass emits: symmetric int8 q, k, v; logits on a
// 2^-10 grid; P in 1/255 steps; the output on v's own scale.
constexpr int64_t kInputQmax = 127;
constexpr double kScoreStep = 1.0 / 1024;
constexpr double kProbStep = 1.0 / 255;
constexpr double kOutQmax = 127;

// Quantizes every float32 SDPA without mask or dropout (the toy's whole case space).
class QuantizeSdpaPass : public Pass {
 public:
  std::string name() const override { return "quantize-sdpa"; }
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override {
    Result result;
    GraphRewriter rw(g);
    for (const Node& n : g.nodes) {
      if (n.op != kSdpaOp) {
        rw.copy(n);
        continue;
      }
      SdpaCall call = read_sdpa_call(n);
      GuardContext guard(env, "%" + n.name);
      guard.rule("float32", g.info(call.q).dtype == DType::f32, "int8 kernels take an f32 call");
      guard.rule("no-mask", !call.mask, "the int8 kernel has no mask input");
      guard.rule("no-dropout", call.dropout_p == 0.0, "the int8 kernel has no dropout");
      Decision d = guard.finish();
      d.forced = !d.rewrite && control.rewrites(d);
      result.decisions.push_back(d);
      if (!control.rewrites(d)) {
        rw.copy(n);
        continue;
      }
      rw.replace(n, {emit(rw, call, n.outputs[0].shape)});
    }
    result.graph = rw.finish();
    return result;
  }

 private:
  static ValueRef emit(GraphRewriter& rw, const SdpaCall& call, const SymShape& out_shape) {
    Graph& out = rw.out();
    auto quantize = [&](ValueRef x, const std::string& name) {
      ValueRef m = rw.map(x);
      return out.call(kQuantizeOp, {m, kInputQmax}, {}, {{DType::i8, out.info(m).shape}}, name);
    };
    ValueRef q = quantize(call.q, "q_int8"), k = quantize(call.k, "k_int8"), v = quantize(call.v, "v_int8");
    const double scale = call.scale ? *call.scale
                                    : 1.0 / std::sqrt(static_cast<double>(out.info(q).shape.back().constant()));
    ValueRef o = out.call(kSdpaInt8Op, {q, k, v, call.is_causal, scale, call.enable_gqa},
                          {{"score_step", kScoreStep}, {"prob_step", kProbStep}, {"out_qmax", kOutQmax}},
                          {{DType::i8, out_shape}}, "sdpa_int8");
    return out.call(kDequantizeOp, {o}, {}, {{DType::f32, out_shape}}, "dequantize");
  }
};

// The declared numerics, read from the graph: the quantize nodes' qmax and
// the int8 SDPA's steps. A graph without the int8 SDPA has none.
KernelNumerics int8_numerics(const Case&, const Graph& g) {
  QuantizedNumerics qn;
  bool found = false;
  for (const Node& n : g.nodes) {
    if (n.op == kQuantizeOp) qn.input_qmax = static_cast<double>(std::get<int64_t>(n.args.at(1)));
    if (n.op != kSdpaInt8Op) continue;
    found = true;
    qn.score_step = std::get<double>(*n.kwarg("score_step"));
    qn.prob_step = std::get<double>(*n.kwarg("prob_step"));
    qn.output_qmax = std::get<double>(*n.kwarg("out_qmax"));
  }
  if (!found) return {};
  qn.multiplier_rel = std::ldexp(1.0, -30);  // a Q31 multiplier m0 >= 2^30 rounded by 1/2
  qn.softmax_unit = unit_roundoff(DType::f32);  // the toy's softmax is f32
  return KernelNumerics::quantized(qn);
}

KernelMutant parse_mutant(const std::string& name) {
  if (name == "output-shift") return KernelMutant::output_shift;
  if (name == "score-shift") return KernelMutant::score_shift;
  return KernelMutant::none;
}

class ToyInt8Target : public Target {
 public:
  explicit ToyInt8Target(Options options)
      : options_(std::move(options)), kernels_(int8_kernels(parse_mutant(options_.at("mutant")))),
        exact_(exact_int8_kernels()) {}

  std::string name() const override { return "toy_int8"; }
  const Options& options() const override { return options_; }
  CaseSpace case_space() const override {
    CaseSpace s;
    s.dtypes = {DType::f32};
    s.bshd_layout = false;
    s.dropout = false;
    s.masks = false;
    s.dynamic_dims = false;
    return s;
  }
  std::optional<std::string> refuses(const Case& c) const override {
    if (c.dtype != DType::f32 || c.mask || c.dropout_p > 0 || c.layout != Layout::bhsd ||
        (c.is_causal && c.causal_alignment != CausalAlignment::top_left))
      return std::string("toy_int8 takes f32 bhsd calls without mask or dropout, causal top-left");
    return std::nullopt;
  }
  Graph entry(const Case& c) const override { return sdpa_entry_graph(c); }
  std::vector<const Pass*> passes() const override { return {&pass_}; }
  std::vector<KernelSetInfo> kernel_sets() const override {
    return {{&kernels_, {DType::f32}, "int8 q, k, v, P and output with fixed-point requantization",
             int8_numerics}};
  }
  const KernelSet& baseline_kernels() const override { return naive_kernels(); }
  const KernelSet& exact_kernels() const override { return exact_; }

 private:
  Options options_;
  QuantizeSdpaPass pass_;
  KernelSet kernels_, exact_;
};

class ToyInt8Factory : public TargetFactory {
 public:
  std::string name() const override { return "toy_int8"; }
  std::string description() const override {
    return "toy: float SDPA quantized to int8 (per-tensor, scales from the call's data)";
  }
  std::vector<OptionSpec> option_specs() const override {
    return {{"guard", {"upstream"}, "upstream", "guard policy: f32, no mask, no dropout"},
            {"entry", {"sdpa"}, "sdpa", "entry form: aten SDPA"},
            {"mutant", {"none", "output-shift", "score-shift"}, "none",
             "a deliberately wrong requantization shift (self-tests)"}};
  }
  std::vector<MutantSpec> mutants() const override {
    return {{"output-shift", {{"mutant", "output-shift"}}, "the output requantization shifts one bit too few"},
            {"score-shift", {{"mutant", "score-shift"}}, "the logit requantization shifts one bit too few"}};
  }
  std::unique_ptr<Target> make(const Options& options) const override {
    return std::make_unique<ToyInt8Target>(options);
  }
};

}  // namespace

std::unique_ptr<TargetFactory> make_factory() { return std::make_unique<ToyInt8Factory>(); }

}  // namespace sdpa::toy_int8
