#include "backends/aten/aten_target.h"

#include "backends/common/libtorch_kernels.h"
#include "backends/aten/math_decomposition.h"
#include "backends/aten/portable_kernels.h"
#include "backends/common/sdpa_entry.h"
#include "harness/adapter/adapter_option.h"
#include "harness/adapter/kernel_adapter_option.h"
#include "harness/io/json_reader.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::aten {
namespace {

constexpr const char* kFullyMaskedNan = "libtorch-1.13-fully-masked-nan";

const std::map<std::string, std::string>& mutant_table() {
  static const std::map<std::string, std::string> m = {
      {"drop-scale", "the decomposition leaves out the sqrt(scale) multiplies"},
      {"causal-bottom-right", "the causal mask is aligned bottom-right (tril diagonal Lkv - Lq)"},
      {"gqa-modulo", "GQA maps query head h to kv head h % Hkv (tile instead of repeat_interleave)"},
      {"softmax-no-max", "the portable _safe_softmax does not subtract the row max"},
      {"matmul-bf16-output", "the portable matmul rounds its result to bf16 (a sound rewrite on an inaccurate kernel)"}};
  return m;
}

// True when every additive mask value of query row `row` (of [batch..., Hq,
// Lq]) becomes -inf in the query dtype: LibTorch 1.13 adds an f32 mask into
// a bf16/f16 score tensor, where an f32 `min` fill overflows.
bool masked_in_query_dtype(const Case& c, const CaseTensors& t, int64_t row) {
  if (!t.mask || t.mask->dtype == DType::b8) return false;
  Shape scores = t.q.shape;  // [batch..., H, L, E] or [batch..., L, H, E]
  if (c.layout == Layout::bshd) std::swap(scores[scores.size() - 3], scores[scores.size() - 2]);
  scores.back() = t.k.shape[t.k.shape.size() - (c.layout == Layout::bshd ? 3 : 2)];
  std::vector<int64_t> idx(scores.size());
  int64_t rest = row;
  for (int64_t d = static_cast<int64_t>(scores.size()) - 2; d >= 0; --d) {
    idx[d] = rest % scores[d];
    rest /= scores[d];
  }
  auto strides = strides_of(t.mask->shape);
  for (idx.back() = 0; idx.back() < scores.back(); ++idx.back()) {
    double m = t.mask->data[broadcast_offset(t.mask->shape, strides, idx)];
    if (round_to(c.dtype, m) != -INFINITY) return false;
  }
  return true;
}

// The rewritten graph upcasts f16/bf16 to f32, splits sqrt(scale) into q
// and k^T and casts the output back: every op computes in f32. LibTorch
// 1.13's fused op (a kept node, passes off) computes in the case dtype:
// q * scale, the scores and P stored in it, bmm accumulating in f32.
KernelNumerics libtorch_numerics(const Case& c, const Graph& g) {
  if (g.count(kSdpaOp) > 0) {
    KernelNumerics n = KernelNumerics::naive(c.dtype);
    n.fp.split_scale = true;  // the composed path multiplies sqrt(scale) into q and k
    return n;
  }
  return KernelNumerics::upcast(c.dtype, /*split_scale=*/true);
}

// The portable SDPA kernel follows the math backend (f32 op-math, split
// scale), as the decomposition does: the same numerics either way.
KernelNumerics portable_numerics(const Case& c, const Graph&) {
  return KernelNumerics::upcast(c.dtype, /*split_scale=*/true);
}

class AtenTarget : public Target {
 public:
  explicit AtenTarget(Options options)
      : options_(std::move(options)),
        mutant_(parse_mutant(options_.at("mutant"))),
        pass_(mutant_),
        portable_(portable_kernels(mutant_)) {
    const std::string& which = options_.at("kernels");
    if (which != "all" && which != "libtorch" && which != "portable" && !names_adapter(which))
      throw InputError("option 'kernels' of target aten: expected all, libtorch, portable or adapter:COMMAND, got '" +
                       which + "'");
    // The adapter's ops in its process, every other op as the portable set computes it.
    adapter_ = make_adapter_kernels(options_, "aten", "kernels", &portable_);
  }

  std::string name() const override { return "aten"; }
  const Options& options() const override { return options_; }

  CaseSpace case_space() const override {
    CaseSpace s;
    s.dtypes.clear();
    for (const auto& ks : kernel_sets())
      for (DType t : ks.dtypes)
        if (std::find(s.dtypes.begin(), s.dtypes.end(), t) == s.dtypes.end()) s.dtypes.push_back(t);
    // The oracles define aten's result for NaN, inf and zero-size dims.
    s.non_finite = true;
    s.empty = true;
    return s;
  }

  std::optional<std::string> refuses(const Case& c) const override {
    if (!(c.start_pos == SymExpr(0)))
      return std::string("the aten entry form has no KV-cache position; start_pos must be 0");
    if (c.dtype == DType::i8) return std::string("the aten target takes float calls only");
    return std::nullopt;
  }

  Graph entry(const Case& c) const override { return sdpa_entry_graph(c); }
  std::vector<const Pass*> passes() const override { return {&pass_}; }

  // PyTorch's own decomposition, where torch.export has it.
  UpstreamRepro upstream_repro() const override {
    UpstreamRepro u;
    u.model = "the math decomposition (_scaled_dot_product_attention_math)";
    u.entry_points = {
        "torch.export.export(module, args).run_decompositions(): PyTorch's own decompositions (PyTorch 2.1 or "
        "later); whether its default table decomposes SDPA into the math backend's ops (semantics llm-and-cuda.md "
        "section 3.4) depends on the PyTorch version, so the script prints the ops of the program it ran"};
    u.python = R"py(
def upstream_program(module, inputs):
    exported = export_call(module, inputs)
    decomposed = in_stage("ExportedProgram.run_decompositions", lambda: exported.run_decompositions())
    return (f"PyTorch {torch.__version__}: torch.export.export(..., strict=True).run_decompositions(), "
            f"then its module() called eagerly"), decomposed.module()
)py";
    if (options_.at("mutant") != "none") u.deviations.push_back(self_test_deviation("mutant", options_.at("mutant")));
    return u;
  }

  std::vector<KernelSetInfo> kernel_sets() const override {
    if (adapter_) return {adapter_->info()};
    const std::string& which = options_.at("kernels");
    std::vector<KernelSetInfo> out;
    if (which == "all" || which == "libtorch")
      out.push_back({&libtorch_kernels(), libtorch_dtypes(), "real ATen ops from LibTorch 1.13",
                     libtorch_numerics});
    if (which == "all" || which == "portable")
      out.push_back({&portable_, {DType::f32, DType::f16, DType::bf16, DType::f64},
                     "portable kernels: f32 op-math (f16/bf16 upcast), the math backend's numerics", portable_numerics});
    return out;
  }

  const KernelSet& baseline_kernels() const override { return naive_kernels(); }

  std::vector<DeclaredDivergence> divergences() const override {
    return {{kFullyMaskedNan,
             "LibTorch 1.13's fused _scaled_dot_product_attention gives NaN for a fully masked "
             "row (also one whose f32 `min` fill overflows to -inf in a bf16/f16 score); "
             "current PyTorch (_safe_softmax, f32 upcast) gives 0 or a finite row"}};
  }

  // LibTorch 1.13's fused op: only a graph that kept the SDPA node runs it.
  std::optional<std::string> explains_nan(const Case& c, const CaseTensors& t, const Golden& g,
                                          const std::vector<int64_t>& rows, const std::string& kernel_set,
                                          const Graph& ran) const override {
    if (kernel_set != "libtorch" || ran.count(kSdpaOp) == 0) return std::nullopt;
    for (int64_t r : rows)
      if (!g.fully_masked.at(static_cast<size_t>(r)) && !masked_in_query_dtype(c, t, r))
        return std::nullopt;
    return std::string(kFullyMaskedNan);
  }

 private:
  Options options_;
  Mutant mutant_;
  MathDecompositionPass pass_;
  KernelSet portable_;
  std::unique_ptr<AdapterKernels> adapter_;  // kernels=adapter:COMMAND: the only set checked
};

class AtenFactory : public TargetFactory {
 public:
  std::string name() const override { return "aten"; }
  std::string description() const override {
    return "PyTorch SDPA through its math decomposition, on LibTorch and portable kernels";
  }
  std::vector<OptionSpec> option_specs() const override {
    std::vector<std::string> mutants{"none"};
    for (const auto& [name, what] : mutant_table()) mutants.push_back(name);
    return {{"guard", {"upstream"}, "upstream", "guard policy: the decomposition takes every call"},
            {"entry", {"sdpa"}, "sdpa", "entry form: aten.scaled_dot_product_attention from export"},
            {"kernels", {}, "all",
             "kernel sets to check: all, libtorch, portable, or adapter:COMMAND (set `adapter`, its ops computed by "
             "COMMAND, docs/adapters.md)"},
            {"mutant", mutants, "none", "a deliberately wrong pass or kernel (self-tests)"},
            kernel_adapter_option_specs()[0], adapter_timeout_spec()};
  }
  std::vector<MutantSpec> mutants() const override {
    std::vector<MutantSpec> out;
    for (const auto& [name, what] : mutant_table()) out.push_back({name, {{"mutant", name}}, what});
    return out;
  }
  std::unique_ptr<Target> make(const Options& options) const override {
    return std::make_unique<AtenTarget>(options);
  }
};

}  // namespace

std::unique_ptr<TargetFactory> make_factory() { return std::make_unique<AtenFactory>(); }

}  // namespace sdpa::aten
