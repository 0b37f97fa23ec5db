#include "backends/cortex_m/cortex_m_target.h"

#include <cmath>
#include <set>

#include "backends/common/sdpa_entry.h"
#include "backends/cortex_m/calibration.h"
#include "backends/cortex_m/cmsis_kernels.h"
#include "backends/cortex_m/cmsis_numerics.h"
#include "backends/cortex_m/cortex_m_invariants.h"
#include "backends/cortex_m/cortex_m_ops.h"
#include "backends/cortex_m/decompose_sdpa_pass.h"
#include "backends/cortex_m/linear_kernel.h"
#include "backends/cortex_m/matmul_to_bmm_pass.h"
#include "backends/cortex_m/mha_composite.h"
#include "backends/cortex_m/mha_entry.h"
#include "backends/cortex_m/quantize_lower_pass.h"
#include "backends/cortex_m/scale_constant.h"
#include "harness/io/json_reader.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::cortex_m {
namespace {

const std::map<std::string, std::string>& mutant_table() {
  static const std::map<std::string, std::string> m = {
      {"non-proportional-qparams",
       "the scale MUL's output observer reads the MUL's input: out_scale == in_scale, not in_scale·scale"},
      {"single-rounding", "CMSIS-NN built with CMSIS_NN_USE_SINGLE_ROUNDING: requantize rounds once, half up"},
      {"softmax-truncating-shift",
       "arm_softmax_s8 divides by 2^bits_over_unit with a plain shift, not DIV_POW2: outputs 1 LSB low"},
      {"quantize-truncates", "quantize_per_tensor rounds inv_scale·x toward zero (a cast), not to nearest"},
      {"unmaterialized-scalar",
       "the lowering hands quantized_mul the scale as a rank-matched [1, ..., 1] constant on every score tensor, "
       "which the runtime cannot broadcast over more than one head or a rank other than 4"},
      {"linear-f16", "the portable fp32 linear (the mha form's projections) accumulates in f16"},
      {"shared-drop-mask", "shared-decomp's emitter leaves the attn_mask out"},
      {"shared-drop-causal", "shared-decomp's emitter leaves the causal mask out"},
      {"shared-drop-dropout", "shared-decomp's emitter leaves the dropout out"},
      {"shared-gqa-tile", "shared-decomp tiles the kv heads (head h reads h % Hk) instead of interleaving them"}};
  return m;
}

KernelFaults kernel_faults(const std::string& mutant) {
  KernelFaults f;
  if (mutant == "softmax-truncating-shift") f.softmax_shift = cmsis::FinalShift::truncating;
  if (mutant == "quantize-truncates") f.quantize = cmsis::QuantizeRounding::toward_zero;
  return f;
}

SharedMutant parse_shared_mutant(const std::string& name) {
  if (name == "shared-drop-mask") return SharedMutant::drop_mask;
  if (name == "shared-drop-causal") return SharedMutant::drop_causal;
  if (name == "shared-drop-dropout") return SharedMutant::drop_dropout;
  if (name == "shared-gqa-tile") return SharedMutant::gqa_tile;
  return SharedMutant::none;
}

// The shared transform has no guard: a weakened rule would change nothing.
const Options& checked(const Options& o) {
  if (o.at("guard") == "shared-decomp" && o.at("weaken") != "none")
    throw InputError("option 'weaken': guard shared-decomp has no guard rule to weaken (the shared transform "
                     "decomposes every SDPA node); use guard decompose or decompose+fold");
  if (parse_shared_mutant(o.at("mutant")) != SharedMutant::none && o.at("guard") != "shared-decomp")
    throw InputError("option 'mutant': " + o.at("mutant") + " is a mutant of guard shared-decomp");
  return o;
}

MulCheck parse_mul_check(const std::string& name) {
  return name == "upstream" ? MulCheck::upstream : name == "rank-matched" ? MulCheck::rank_matched : MulCheck::annotate;
}

LinearMeta parse_linear(const std::string& name) {
  return name == "int8" ? LinearMeta::int8_meta : name == "retraced-int32" ? LinearMeta::retraced_int32
                                                                          : LinearMeta::not_annotated;
}

class CortexMTarget : public Target {
 public:
  explicit CortexMTarget(Options options)
      : options_(checked(options)),
        policy_(*parse_policy(options_.at("guard"))),
        quantized_(options_.at("quantize") == "int8"),
        mha_(options_.at("entry") == "mha"),
        decompose_(policy_, parse_guard_rule(options_.at("weaken")), parse_shared_mutant(options_.at("mutant"))),
        lower_(QuantizerConfig{policy_ == Policy::decompose_fold, options_.at("softmax-check") == "upstream",
                               options_.at("mutant") == "non-proportional-qparams",
                               options_.at("mul-qparams") == "derived", parse_linear(options_.at("linear")),
                               parse_mul_check(options_.at("mul-check")),
                               options_.at("observer") == "histogram" ? Observer::histogram : Observer::minmax,
                               options_.at("mutant") != "unmaterialized-scalar"}),
        kernels_(cmsis_nn_kernels(
            options_.at("mutant") == "single-rounding" ? cmsis::Rounding::single_rounding
                                                       : cmsis::Rounding::double_rounding,
            options_.at("mutant") == "linear-f16" ? DType::f16 : DType::f32,
            options_.at("overflow") == "wrap" ? cmsis::Overflow::wrap : cmsis::Overflow::undefined,
            options_.at("cpu") == "m55" ? cmsis::Isa::helium : cmsis::Isa::scalar, kernel_faults(options_.at("mutant")))),
        exact_(exact_cortex_m_kernels()),
        baseline_(naive_kernels()) {
    add_linear_kernel(baseline_, /*exact=*/false);  // the mha form's projections, naive fp32
  }

  std::string name() const override { return "cortex-m"; }
  const Options& options() const override { return options_; }

  CaseSpace case_space() const override {
    CaseSpace s;
    s.dtypes = {DType::f32};
    s.dynamic_dims = false;
    s.start_pos = false;
    if (options_.at("space") == "eligible") {
      // Only the calls DecomposeSDPAPass takes (semantics/passes.md §1).
      s.masks = s.causal = s.dropout = s.grouped_heads = false;
    }
    if (mha_) {
      // What nn.MultiheadAttention cannot express is not drawn (mha_refuses).
      s.bshd_layout = s.masks = s.dropout = s.causal = false;
      s.grouped_heads = s.distinct_value_dim = s.explicit_scale = false;
    }
    return s;
  }

  std::optional<std::string> refuses(const Case& c) const override {
    if (c.dtype != DType::f32) return std::string("the cortex-m entry form is an fp32 graph from export");
    if (!c.symbols.empty()) return std::string("the cortex-m entry form has static shapes (no symbols)");
    if (!(c.start_pos == SymExpr(0))) return std::string("the cortex-m entry form has no KV-cache position");
    if (mha_) return mha_refuses(c);
    return std::nullopt;
  }

  // The aten SDPA export hands the pipeline, carrying the call's own tensors
  // as the example inputs the quantizer calibrates on.
  Graph entry(const Case& c) const override {
    Graph g = mha_ ? mha_entry_graph(c) : sdpa_entry_graph(c);
    if (quantized_) attach_example_inputs(g, run_inputs(c), c.data.seed);
    return g;
  }

  // The int8 graph's qparams are calibrated on the case's own tensors.
  bool rewrite_fits_case_data() const override { return quantized_; }

  std::optional<Composite> composite(const Case& c) const override {
    if (!mha_) return std::nullopt;
    return mha_composite(c);
  }

  // The module's query, key and value (static shapes: one run).
  std::map<std::string, Tensor> inputs(const Case& c, const CaseTensors& t) const override {
    return mha_ ? mha_inputs(c) : Target::inputs(c, t);
  }

  // §1.6: the retrace of a bmm whose operands differ in dtype fails upstream.
  std::vector<std::string> type_errors(const Graph& g) const override { return retrace_type_errors(g); }
  std::vector<GraphConstant> constants(const Graph& g) const override { return scale_constants(g); }

  std::vector<const Pass*> passes() const override {
    std::vector<const Pass*> p;
    if (policy_ != Policy::none) p.push_back(&decompose_);
    p.push_back(&to_bmm_);
    if (quantized_) p.push_back(&lower_);
    return p;
  }

  // The upstream pipeline a repro script could run: none whole (cortex-m-and-xnnpack.md section 1).
  UpstreamRepro upstream_repro() const override {
    UpstreamRepro u;
    u.model = "the SDPA decomposition and its int8 lowering (DecomposeSDPAPass, the quantizer, AtenToCortexMPass)";
    u.entry_points = {
        "executorch.backends.cortex_m.passes.cortex_m_pass_manager.CortexMPassManager: transform_for_annotation "
        "(ScalarsToAttributePass ... MatmulToBmmPass) and the lowering pass_list ending in AtenToCortexMPass "
        "(semantics cortex-m-and-xnnpack.md section 1.1)",
        "DecomposeSDPAPass (options guard=decompose and decompose+fold; semantics passes.md section 1) is not in "
        "ExecuTorch main: main decomposes SDPA only through DecomposeScaledDotProductAttentionPass "
        "(backends/arm/_passes/decompose_sdpa_pass.py, guard=shared-decomp), which users apply themselves before "
        "prepare_pt2e (section 1.3)",
        "the int8 kernels are CMSIS-NN's (cortex_m::quantized_* ops), which run on the Cortex-M runtime"};
    u.probes = {"executorch.backends.cortex_m.passes.cortex_m_pass_manager"};
    u.not_run = "the decomposition this target models is not in ExecuTorch main and the CMSIS-NN kernels run on "
                "the Cortex-M runtime: the script does not run the Cortex-M pipeline";
    for (const char* key : {"weaken", "mutant"})
      if (options_.at(key) != "none") u.deviations.push_back(self_test_deviation(key, options_.at(key)));
    return u;
  }

  std::vector<KernelSetInfo> kernel_sets() const override {
    return {{&kernels_, {DType::f32},
             "CMSIS-NN int8 models for the cortex_m ops, portable f32 kernels for what stays float",
             [histogram = options_.at("observer") == "histogram"](const Case& c, const Graph& g) {
               return cmsis_numerics(c, g, histogram);
             }}};
  }
  const KernelSet& exact_kernels() const override { return exact_; }
  const KernelSet& baseline_kernels() const override { return baseline_; }

  Violations violations(const Case& c, const Graph& before, const Graph& after) const override {
    InvariantContext ctx{decompose_, policy_, quantized_, kernels_, {}};
    if (quantized_) ctx.inputs = run_inputs(c);
    return cortex_m_invariants(ctx, c, before, after);
  }

 private:
  std::map<std::string, Tensor> run_inputs(const Case& c) const {
    return mha_ ? mha_inputs(c) : Target::inputs(c, make_case_tensors(c, c.runs().at(0)));
  }

  Options options_;
  Policy policy_;
  bool quantized_;
  bool mha_;
  DecomposeSdpaPass decompose_;
  MatmulToBmmPass to_bmm_;
  QuantizeLowerPass lower_;
  KernelSet kernels_, exact_, baseline_;
};

class CortexMFactory : public TargetFactory {
 public:
  std::string name() const override { return "cortex-m"; }
  std::string description() const override {
    return "ExecuTorch Cortex-M: fp32 SDPA decomposed, quantized per-tensor int8 and lowered to CMSIS-NN kernels";
  }
  std::vector<OptionSpec> option_specs() const override {
    std::vector<std::string> weaken{"none"}, mutants{"none"};
    for (const auto& [rule, name] : guard_rules()) weaken.push_back(name);
    for (const auto& [name, what] : mutant_table()) mutants.push_back(name);
    return {{"guard", {"decompose", "decompose+fold", "shared-decomp", "none"}, "decompose",
             "DecomposeSDPAPass policy: decompose (one scale MUL, run as an int8 multiply), decompose+fold (the "
             "MUL folded into the preceding requantization), shared-decomp (the generic decompose_sdpa.py: no "
             "guard, sqrt(scale) into q and k, masks, causal, dropout and GQA decomposed), none"},
            {"entry", {"sdpa", "mha"}, "sdpa",
             "entry form: sdpa, an fp32 aten SDPA from export, static shapes; mha, nn.MultiheadAttention "
             "(in-projection linears, SDPA, out-projection linear; weights from the case's data stream)"},
            {"linear", {"fp32", "int8", "retraced-int32"}, "fp32",
             "the mha form's linears: fp32 (not annotated), int8 (annotated, folded with an int8 output meta and "
             "lowered to cortex_m.quantized_linear), retraced-int32 (folded, the retrace's int32 output meta, #21943)"},
            {"space", {"all", "eligible"}, "all",
             "all: every fp32 call (an ineligible one is checked to be left unchanged; shared-decomp decomposes "
             "it); eligible: only calls the decompose guard takes (no mask, not causal, no dropout, Hq == Hkv)"},
            {"mul-qparams", {"observed", "derived"}, "observed",
             "the scale MUL's output qparams: observed (their own min/max observer, proportional to the input's "
             "by observation, as upstream's quantizer gives them) or derived (S_in * scale and Z_in for a positive "
             "scale, #22796's proposal)"},
            {"mul-check", {"annotate", "upstream", "rank-matched"}, "annotate",
             "the scale MUL of decompose: annotate (quantized as cortex_m.quantized_mul, passes.md's design), "
             "upstream (CortexMAddMulCheck rejects the rank-1 full([1]) operand ReplaceScalarWithTensorArgPass "
             "gives it: an fp32 MUL between dequantize and quantize) or rank-matched (upstream's DecomposeSDPAPass "
             "multiplies by a Python scalar, which ScalarsToAttributePass makes a (1,)*R buffer: quantized where "
             "the check takes it, one head's 4-D scores or scores of all sizes 1, an fp32 MUL otherwise)"},
            {"observer", {"minmax", "histogram"}, "minmax",
             "the activation observer: minmax (torch's MinMaxObserver, in double) or histogram (HistogramObserver, "
             "the CortexMQuantizer's: 2048 bins, L2 search, float32)"},
            {"overflow", {"undefined", "wrap"}, "undefined",
             "arm_nn_requantize's left shift v * (1 << s) past int32: undefined (signed overflow is undefined "
             "behaviour in C: a finding naming the operand) or wrap (two's complement, as the compiled Arm code "
             "computes it)"},
            {"cpu", {"scalar", "m55"}, "scalar",
             "the code paths of the ops and CMSIS-NN: scalar (cores without MVE: Cortex-M4, M7, M33) or m55 "
             "(Helium, upstream's default target: quantize_per_tensor's blocks of 16 rounded once, "
             "arm_softmax_s8's vector lanes defined past a row sum of 2^28; GCC 12.0 to 12.2 builds run the scalar softmax)"},
            {"weaken", weaken, "none", "switch off one rule of the decomposition's guard (self-tests)"},
            {"quantize", {"int8", "off"}, "int8",
             "int8: the quantizer and AtenToCortexMPass run; off: the float graph after MatmulToBmmPass"},
            {"softmax-check", {"upstream", "last-dim"}, "upstream",
             "upstream: CortexMSoftmaxCheck rejects a 4-D softmax it takes for channels-last; last-dim: any "
             "softmax over the last dim is quantized"},
            {"kernels", {"cmsis-nn"}, "cmsis-nn", "kernel set: CMSIS-NN int8 models"},
            {"mutant", mutants, "none",
             "a deliberately wrong quantizer, kernel or (shared-*, with guard shared-decomp) emitter (self-tests)"}};
  }
  std::vector<MutantSpec> mutants() const override {
    std::vector<MutantSpec> out;
    // The shared-decomp emitter's mutants (option mutant=shared-*) are not
    // listed: a campaign's first finding under shared-decomp is the shared
    // transform's own raise, not the mutant's (CaughtAndShrunk looks for theirs).
    for (const auto& [name, what] : mutant_table())
      if (parse_shared_mutant(name) == SharedMutant::none) out.push_back({name, {{"mutant", name}}, what});
    // The linears are the mha form's; f16 rounding shows against fp32 attention.
    for (auto& m : out)
      if (m.name == "linear-f16") m.options.insert({{"entry", "mha"}, {"quantize", "off"}});
    // The case space draws only fp32, static, rank >= 3 calls with equal
    // leading dims: weakening those rules has no consequence a campaign can
    // reach (the pass tests cover them), so only these four are mutants.
    for (const auto& [rule, name] : guard_rules())
      if (rule == GuardRule::no_mask || rule == GuardRule::not_causal || rule == GuardRule::no_dropout ||
          rule == GuardRule::equal_heads)
        out.push_back({"weaken-" + name, {{"weaken", name}}, "the decompose guard without its " + name + " rule"});
    return out;
  }
  std::unique_ptr<Target> make(const Options& options) const override {
    return std::make_unique<CortexMTarget>(options);
  }
};

}  // namespace

std::unique_ptr<TargetFactory> make_factory() { return std::make_unique<CortexMFactory>(); }

}  // namespace sdpa::cortex_m
