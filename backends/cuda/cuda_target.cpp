#include "backends/cuda/cuda_target.h"

#include <algorithm>
#include <cmath>

#include "backends/common/sdpa_entry.h"
#include "backends/cuda/cuda_invariants.h"
#include "backends/cuda/fused_entry.h"
#include "backends/cuda/replace_fused_sdpa_pass.h"
#include "backends/cuda/triton/triton_routing_pass.h"
#include "backends/cuda/triton/triton_sdpa_kernel.h"
#include "backends/cuda/triton/triton_splitk_kernel.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::cuda {
namespace {

// With Triton kernel mode off, AOTInductor compiles a remaining aten SDPA
// under sdpa_kernel([SDPBackend.MATH]) (llm-and-cuda.md §4.2). Modeled by the
// harness reference kernels in emulated numerics, whose SDPA follows the math
// backend (f16/bf16 upcast to f32, sqrt(scale) split into q and k). The
// backend has no kernel for a fused variant: it refuses each, naming the op.
KernelSet math_kernels() {
  KernelSet k = make_reference_kernels("math", Numerics::emulated);
  for (const char* op : {kFlashOp, kEfficientOp, kCudnnOp})
    k.add(op, [op = std::string(op)](const KernelArgs&) -> std::vector<Tensor> {
      throw KernelError(KernelError::Kind::unsupported,
                        "missing fallback kernel: the CUDA backend has no kernel for " + op);
    });
  return k;
}

KernelNumerics math_numerics(const Case& c, const Graph&) {
  return KernelNumerics::upcast(c.dtype, /*split_scale=*/true);
}

// Triton kernel mode on (the compile spec's default): the routed Triton ops
// on their models, every other op on the reference kernels.
// `max`: how the split-K program normalizes its exponentials (option splitk);
// `fault`: a wrong triton.sdpa program (option kernel_mutant, self-tests);
// `tree`: the ExecuTorch tree of triton.sdpa (option executorch).
KernelSet triton_kernels(cuda_triton::SplitKMax max, cuda_triton::SdpaFault fault, cuda_triton::SdpaTree tree) {
  KernelSet k("triton");
  const KernelSet math = math_kernels();
  for (const auto& op : math.ops()) k.add(op, *math.find(op));
  k.add(cuda_triton::kTritonSdpaOp, cuda_triton::triton_sdpa_kernel(Numerics::emulated, fault, tree));
  k.add(cuda_triton::kTritonSplitKOp, cuda_triton::triton_splitk_kernel(Numerics::emulated, max));
  return k;
}

cuda_triton::SplitKMax parse_splitk(const std::string& s) {
  return s == "running-max" ? cuda_triton::SplitKMax::running_max : cuda_triton::SplitKMax::fixed_phi;
}

cuda_triton::SdpaTree parse_tree(const std::string& s) {
  return s == "2025-12-17" ? cuda_triton::SdpaTree::dec_2025 : cuda_triton::SdpaTree::main;
}

cuda_triton::SdpaFault parse_kernel_mutant(const std::string& s) {
  return s == "triton-unsafe-softmax" ? cuda_triton::SdpaFault::unsafe_softmax : cuda_triton::SdpaFault::none;
}

KernelSet exact_with_triton(cuda_triton::SdpaTree tree) {
  KernelSet k = make_reference_kernels("exact", Numerics::exact);
  k.add(cuda_triton::kTritonSdpaOp, cuda_triton::triton_sdpa_kernel(Numerics::exact, cuda_triton::SdpaFault::none, tree));
  k.add(cuda_triton::kTritonSplitKOp, cuda_triton::triton_splitk_kernel(Numerics::exact));
  return k;
}

// triton::sdpa and the split-K programs (llm-and-cuda.md §4.3-4.4): bf16
// in and out, f32 scores and accumulators, the scale applied once in f32,
// P rounded to bf16 before P @ V. A graph without a Triton op (a kept fused
// node) computes on the math path.
KernelNumerics triton_numerics(const Case& c, const Graph& g) {
  if (g.count(cuda_triton::kTritonSdpaOp) + g.count(cuda_triton::kTritonSplitKOp) == 0)
    return math_numerics(c, g);
  return KernelNumerics::floating({c.dtype, DType::f32, DType::f32, DType::f32, c.dtype, false});
}

// The largest |q_i . k_j| * |scale| the call can reach (Cauchy-Schwarz over rows).
double score_bound(const Case& c, const CaseTensors& t) {
  auto largest_row_norm = [](const Tensor& x) {
    const int64_t d = x.shape.back();
    double best = 0;
    for (int64_t row = 0; row * d < x.numel(); ++row) {
      double sq = 0;
      for (int64_t e = 0; e < d; ++e) sq += x.data[row * d + e] * x.data[row * d + e];
      best = std::max(best, std::sqrt(sq));
    }
    return best;
  };
  return std::fabs(c.effective_scale()) * largest_row_norm(t.q) * largest_row_norm(t.k);
}

// Where cuDNN's -65504 stands in for a false mask entry, the oracles (aten's
// -inf) agree only if every row keeps a key and no dropped key can come
// within 40 of a kept one (exp(-40) ~ 4e-18, far inside the exact tolerance).
std::optional<std::string> finite_fill_differs(const Case& c) {
  for (const auto& at : c.runs()) {
    CaseTensors t = make_case_tensors(c, at);
    const int64_t cols = t.mask->shape.back();
    for (int64_t row = 0; row * cols < t.mask->numel(); ++row) {
      bool any = false;
      for (int64_t j = 0; j < cols && !any; ++j) any = t.mask->data[row * cols + j] != 0.0;
      if (!any) return std::string("a row with every key false attends every key");
    }
    if (2 * score_bound(c, t) >= 65504.0 - 40.0)
      return std::string("scores as large as the fill let false keys take part");
  }
  return std::nullopt;
}

class CudaTarget : public Target {
 public:
  explicit CudaTarget(Options options)
      : options_(std::move(options)),
        entry_(*parse_entry(options_.at("entry"))),
        priority_(*parse_priority(options_.at("priority"))),
        pass_(parse_fused_rule(options_.at("weaken")), *parse_replace_fault(options_.at("mutant"))),
        routing_(parse_tree(options_.at("executorch"))),
        triton_(options_.at("triton") == "on"),
        kernels_(triton_ ? triton_kernels(parse_splitk(options_.at("splitk")),
                                          parse_kernel_mutant(options_.at("kernel_mutant")),
                                          parse_tree(options_.at("executorch")))
                         : math_kernels()),
        exact_(exact_with_triton(parse_tree(options_.at("executorch")))) {}

  std::string name() const override { return "cuda"; }
  const Options& options() const override { return options_; }

  CaseSpace case_space() const override {
    CaseSpace s;
    const bool half_only = entry_ == EntryForm::flash || entry_ == EntryForm::cudnn;
    s.dtypes = half_only ? std::vector<DType>{DType::f16, DType::bf16}
                         : std::vector<DType>{DType::f32, DType::f16, DType::bf16};
    // The Triton kernels take bf16 only (any other dtype raises "Expected
    // bfloat16 inputs"): with them on, the generators draw bf16 calls.
    if (triton_) s.dtypes = {DType::bf16};
    // Their power-of-2 programs' tl.dot contracts over K = D >= 16: smaller
    // powers of two do not compile, so the space asks for head dims the
    // kernels compute at every size, beside those smaller ones.
    if (triton_) s.kernel_min_pow2_head_dim = 16;
    s.bshd_layout = false;  // the fused ops take [B, H, L, D]
    s.masks = entry_ != EntryForm::flash;
    s.max_batch_rank = entry_ == EntryForm::dispatch ? 2 : 1;
    s.batch_rank_weights = entry_ == EntryForm::dispatch ? std::vector<double>{1, 8, 1} : std::vector<double>{0, 1};
    s.variants = {{kPlain, 6}, {kLseReader, 2}, {kCausalBias, 2}, {kCond, 1}, {kCondLseReader, 1}};
    if (entry_ == EntryForm::flash) s.causal_alignments = {CausalAlignment::bottom_right};
    return s;
  }

  std::optional<std::string> refuses(const Case& c) const override {
    if (c.layout != Layout::bhsd) return std::string("the cuda entry forms are [B, H, L, D] (layout bhsd)");
    if (c.dtype == DType::i8) return std::string("the cuda target takes float calls only");
    if (!(c.start_pos == SymExpr(0))) return std::string("the cuda entry forms have no KV-cache position");
    if (auto why = entry_refuses(entry_, c)) return why;
    if (entry_variant(entry_, c, priority_) == Variant::cudnn && c.mask && c.mask->dtype == DType::b8)
      if (auto why = finite_fill_differs(c))
        return "cuDNN receives a bool mask as a -65504 bias (llm-and-cuda.md §3.2, §3.8): " + *why +
               ", which aten's -inf excludes; the oracles model aten";
    return std::nullopt;
  }

  std::map<std::string, Tensor> inputs(const Case& c, const CaseTensors& t) const override {
    std::map<std::string, Tensor> in = Target::inputs(c, t);
    if (is_cond_variant(c.variant)) {
      Tensor pred(DType::b8, {1});
      pred.data[0] = 1.0;  // the branch holding the fused call
      in["pred"] = pred;
    }
    return in;
  }

  Graph entry(const Case& c) const override {
    return fused_entry_graph(c, entry_variant(entry_, c, priority_), entry_ == EntryForm::dispatch);
  }

  // Only a direct flash call aligns causal bottom-right; with Lq == Lkv
  // statically the alignments agree, and the case says top-left.
  Case meaning(const Case& c) const override {
    Case m = c;
    if (!c.is_causal) return m;
    const bool square = c.shape_env().statically_known(Fact{c.q_len, Rel::eq, c.kv_len});
    m.causal_alignment = entry_variant(entry_, c, priority_) == Variant::flash && !square ? CausalAlignment::bottom_right
                                                                                : CausalAlignment::top_left;
    return m;
  }

  std::vector<GraphConstant> constants(const Graph& g) const override {
    for (const Node& n : g.nodes)
      if (is_fused_op(n.op) || n.op == kSdpaOp)
        if (const Arg* s = n.kwarg("scale"); s && std::holds_alternative<double>(*s))
          return {{"scale", std::get<double>(*s), DType::f64}};
    return {};
  }

  std::vector<const Pass*> passes() const override {
    if (options_.at("guard") == "none") return {};
    if (triton_) return {&pass_, &routing_};
    return {&pass_};
  }

  // The upstream pipeline a repro script could run: none here (semantics llm-and-cuda.md section 4).
  UpstreamRepro upstream_repro() const override {
    UpstreamRepro u;
    u.model = triton_ ? "ReplaceFusedSdpaWithSdpaPass and the Triton SDPA kernels" : "ReplaceFusedSdpaWithSdpaPass";
    u.entry_points = {
        "ReplaceFusedSdpaWithSdpaPass: not in ExecuTorch main (cff6f4dd32), in none of its branch tips and not in "
        "the public code index (semantics llm-and-cuda.md section 4.1): the pass this target models (semantics "
        "passes.md section 2) has no upstream code to run",
        "executorch.backends.cuda.triton.replacement_pass.ReplaceEdgeOpWithTritonOpPass: in ExecuTorch main; "
        "replaces every edge SDPA by triton::sdpa or triton::sdpa_decode_splitk (section 4.2), whose kernels "
        "need a CUDA device and Triton"};
    u.probes = {"executorch.backends.cuda.triton.replacement_pass"};
    u.not_run = "ReplaceFusedSdpaWithSdpaPass is not in ExecuTorch and the Triton kernels need a CUDA device: "
                "the script does not run the CUDA pipeline";
    if (triton_ && options_.at("executorch") != "main")
      u.deviations.push_back("option executorch=" + options_.at("executorch") +
                             ": the model is ExecuTorch's Triton pass and triton.sdpa of that date (4495d959e2), "
                             "not main's");
    std::vector<std::string> self_tests = {"weaken", "mutant"};
    if (triton_) self_tests.push_back("kernel_mutant");  // the math path has no Triton kernel to mutate
    for (const std::string& key : self_tests)
      if (options_.at(key) != "none") u.deviations.push_back(self_test_deviation(key, options_.at(key)));
    return u;
  }

  std::vector<KernelSetInfo> kernel_sets() const override {
    if (triton_)
      return {{&kernels_, {DType::bf16}, "triton.sdpa and triton.sdpa_decode_splitk models; no fused op",
               triton_numerics}};
    return {{&kernels_, {DType::f32, DType::f16, DType::bf16},
             "reference kernels in emulated numerics (aten SDPA as the math backend); no fused op",
             math_numerics}};
  }
  const KernelSet& exact_kernels() const override { return exact_; }
  const KernelSet& baseline_kernels() const override { return naive_kernels(); }

  std::vector<std::string> invariants(const Case& c, const Graph& before, const Graph& after) const override {
    if (options_.at("guard") == "none") return {};  // no pass, no rewrite to hold to them
    return fused_rewrite_invariants(pass_, c.shape_env(), before, after);
  }

 private:
  Options options_;
  EntryForm entry_;
  Priority priority_;
  ReplaceFusedSdpaWithSdpaPass pass_;
  cuda_triton::ReplaceEdgeOpWithTritonOpPass routing_;
  bool triton_;
  KernelSet kernels_, exact_;
};

class CudaFactory : public TargetFactory {
 public:
  std::string name() const override { return "cuda"; }
  std::string description() const override {
    return "ExecuTorch CUDA backend: fused flash/efficient/cuDNN SDPA back to aten SDPA, then (triton=on) to the Triton kernels";
  }
  std::vector<OptionSpec> option_specs() const override {
    std::vector<std::string> weaken{"none"};
    for (const auto& [rule, name] : fused_rules()) weaken.push_back(name);
    return {{"guard", {"none", "replace"}, "replace",
             "none: no pass (the backend's missing fallback kernel); replace: ReplaceFusedSdpaWithSdpaPass"},
            {"entry", {"dispatch", "flash", "efficient", "cudnn"}, "dispatch",
             "the fused op export emits: PyTorch's CUDA dispatcher's choice, or one op called directly"},
            {"priority", {"default", "cudnn-first", "cudnn-first-sm90-9.10", "cudnn-first-sm90-9.11"}, "default",
             "the dispatcher's backend order (entry=dispatch): default flash, efficient, math, cuDNN; "
             "cudnn-first as on sm90/sm100 with cuDNN >= 9.9 (head dims up to 128); cudnn-first-sm90-9.10: sm90 "
             "with cuDNN 9.10 (up to 256); cudnn-first-sm90-9.11: sm90 with cuDNN 9.11 to 9.13 (up to 256, no "
             "dropout)"},
            {"weaken", weaken, "none", "switch off one guard rule (self-tests)"},
            {"mutant", {"none", "replace-drops-scale", "replace-drops-enable-gqa"}, "none",
             "a wrong replacement (self-tests): the SDPA node without the fused call's scale, or without its "
             "enable_gqa"},
            {"executorch", {"main", "2025-12-17"}, "main",
             "the ExecuTorch tree of the Triton pass and triton.sdpa (triton=on; no effect with triton=off): "
             "main, or 2025-12-17 (4495d959e2: every SDPA to triton.sdpa, no split-K; enable_gqa refused, a mask "
             "[B, H, Lq, Lkv] of any H read at head 0 for every head, no safe_diff, no tile skipping)"},
            {"kernel_mutant", {"none", "triton-unsafe-softmax"}, "none",
             "a wrong Triton kernel (self-tests; no effect with triton=off): triton-unsafe-softmax, triton.sdpa's "
             "online softmax as at executorch 4495d959e2, without safe_diff and tile skipping (NaN from a tile "
             "before a row's first kept key)"},
            {"triton", {"off", "on"}, "off",
             "the compile spec's triton_kernel_mode: on adds ReplaceEdgeOpWithTritonOpPass and runs "
             "triton.sdpa / sdpa_decode_splitk (bf16); off compiles aten SDPA on the math path"},
            {"splitk", {"fixed-phi", "running-max"}, "fixed-phi",
             "how triton.sdpa_decode_splitk normalizes a split's exponentials (triton=on): fixed-phi, "
             "p = exp(s - phi) with phi = 5 (semantics section 4.4, since executorch 1014985bc6); running-max, "
             "a per-split running maximum rescaled by the global one in the reduce, phi ignored (the split-K "
             "normalization of sdpa.py at executorch 01b05b9088)"}};
  }
  std::vector<MutantSpec> mutants() const override {
    std::vector<MutantSpec> out;
    for (const auto& [rule, name] : fused_rules()) {
      MutantSpec m{"weaken-" + name, {{"guard", "replace"}, {"weaken", name}},
                   "the replace guard without its " + name + " rule"};
      // The entry where the rule has a consequence: flash's bottom-right causal, efficient's causal bias.
      if (rule == FusedRule::causal_lengths) m.options["entry"] = "flash";
      if (rule == FusedRule::causal_bias) m.options["entry"] = "efficient";
      out.push_back(m);
    }
    out.push_back({"replace-drops-scale", {{"guard", "replace"}, {"mutant", "replace-drops-scale"}},
                   "the replacement SDPA leaves out the fused call's scale (the padded flash call's og_scale too)"});
    out.push_back({"replace-drops-enable-gqa", {{"guard", "replace"}, {"mutant", "replace-drops-enable-gqa"}},
                   "the replacement SDPA leaves out enable_gqa where the head counts may differ"});
    out.push_back({"triton-unsafe-softmax", {{"triton", "on"}, {"kernel_mutant", "triton-unsafe-softmax"}},
                   "triton.sdpa's online softmax as at executorch 4495d959e2: NaN from a tile before a row's first "
                   "kept key (no safe_diff, no tile skipping); its nan-mismatch comes after the Triton pipeline's "
                   "own findings"});
    return out;
  }
  std::unique_ptr<Target> make(const Options& options) const override {
    return std::make_unique<CudaTarget>(options);
  }
};

}  // namespace

std::unique_ptr<TargetFactory> make_factory() { return std::make_unique<CudaFactory>(); }

}  // namespace sdpa::cuda
