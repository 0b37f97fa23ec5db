#include "backends/llm/llm_target.h"

#include <cmath>

#include "backends/common/libtorch_kernels.h"
#include "backends/common/sdpa_entry.h"
#include "backends/llm/contract_spec.h"
#include "backends/llm/custom_sdpa_kernel.h"
#include "backends/llm/llm_upstream_repro.h"
#include "backends/llm/replace_sdpa_pass.h"
#include "harness/adapter/adapter_option.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::llm {
namespace {

constexpr const char* kFullyMaskedNan = "custom-sdpa-fully-masked-nan";
constexpr const char* kCausalOverwrite = "custom-sdpa-causal-drops-non-finite";

// Query row `row` of [B, Hq, Lq] under a causal call: its scores q.k * scale
// at the kept keys (j <= i, the pass's start_pos 0) hold no NaN or +inf,
// and a dropped key's score does, or its V holds inf or NaN. aten adds the
// causal -inf (NaN + -inf and inf + -inf are NaN) and multiplies the zero
// weight into V (0 * inf is NaN): the row is NaN. custom_sdpa writes -inf
// over q.k before the scale (§1.8) and reads no key past start_pos + Lq
// (§1.5), so the row can keep a finite value.
bool causal_drop_explains(const Case& c, const CaseTensors& t, int64_t row) {
  if (t.q.shape.size() != 4 || t.k.shape.size() != 4 || t.v.shape.size() != 4) return false;
  const int64_t Hq = t.q.shape[1], Lq = t.q.shape[2], E = t.q.shape[3];
  const int64_t Hkv = t.k.shape[1], Lkv = t.k.shape[2], Ev = t.v.shape[3];
  const int64_t b = row / (Hq * Lq), h = (row / Lq) % Hq, i = row % Lq;
  const int64_t hk = Hkv == Hq ? h : (Hkv == 1 ? 0 : h / (Hq / Hkv));
  bool kept_ok = true, dropped_bad = false;
  for (int64_t j = 0; j < Lkv; ++j) {
    long double x = 0;
    for (int64_t e = 0; e < E; ++e)
      x += static_cast<long double>(t.q.data[((b * Hq + h) * Lq + i) * E + e]) *
           t.k.data[((b * Hkv + hk) * Lkv + j) * E + e];
    x *= static_cast<long double>(c.effective_scale());
    bool bad = std::isnan(x) || x == INFINITY;
    if (j <= i) {
      kept_ok = kept_ok && !bad;
      continue;
    }
    for (int64_t e = 0; e < Ev; ++e) bad = bad || !std::isfinite(t.v.data[((b * Hkv + hk) * Lkv + j) * Ev + e]);
    dropped_bad = dropped_bad || bad;
  }
  return kept_ok && dropped_bad;
}

// ATen ops from LibTorch, llama.custom_sdpa from the model, and a kept aten
// SDPA as ExecuTorch lowers it: its math decomposition on portable kernels
// (f32 op-math, current PyTorch semantics).
KernelSet custom_ops_kernels(KernelFault fault) {
  KernelSet k("custom_ops");
  const KernelSet& aten = libtorch_kernels();
  for (const auto& op : aten.ops()) k.add(op, *aten.find(op));
  KernelSet portable = make_reference_kernels("portable", Numerics::emulated);
  k.add(kSdpaOp, *portable.find(kSdpaOp));
  k.add(kCustomSdpaOp, custom_sdpa_kernel(Numerics::emulated, fault));
  return k;
}

// custom_sdpa (§1.10-1.11): q.k summed in f32, the scale (rounded to f32, charged as
// the operand rounding) applied once,
// scores f32, P rounded to the activation dtype before P @ V, which sums in
// f32. A kept aten SDPA runs its math decomposition: f32 throughout.
KernelNumerics custom_ops_numerics(const Case& c, const Graph& g) {
  if (g.count(kCustomSdpaOp) == 0) return KernelNumerics::upcast(c.dtype, /*split_scale=*/true);
  if (!is_floating(c.dtype)) return {};
  return KernelNumerics::floating({c.dtype, DType::f32, DType::f32, DType::f32, c.dtype, false});
}

// The self-test kernel mutants: option value -> the fault.
const std::map<std::string, KernelFault>& kernel_mutants() {
  static const std::map<std::string, KernelFault> m = {{"none", {}},
                                                       {"pv-bf16-accumulation", {DType::bf16, false}},
                                                       {"nan-to-zero", {DType::f32, true}}};
  return m;
}

KernelSet exact_custom_ops() {
  KernelSet k = make_reference_kernels("exact", Numerics::exact);
  k.add(kCustomSdpaOp, custom_sdpa_kernel(Numerics::exact));
  return k;
}

std::optional<ContractRule> parse_rule(const std::string& name) {
  for (const auto& [rule, rule_name] : contract_rules())
    if (rule_name == name) return rule;
  return std::nullopt;
}

PassConfig config_of(const Options& o) {
  PassConfig c;
  c.policy = o.at("guard") == "contract" ? GuardPolicy::contract : GuardPolicy::upstream;
  c.assume_causal_mask = o.at("assume_causal_mask") == "true";
  c.weakened = parse_rule(o.at("weaken"));
  c.misevaluated = parse_rule(o.at("miseval"));
  return c;
}

class LlmTarget : public Target {
 public:
  explicit LlmTarget(Options options)
      : options_(std::move(options)),
        pass_(config_of(options_)),
        adapter_(make_adapter_pass(options_, "llm", pass_.name())),
        kernels_(custom_ops_kernels(kernel_mutants().at(options_.at("kernel_mutant")))),
        exact_(exact_custom_ops()) {}

  std::string name() const override { return "llm"; }
  const Options& options() const override { return options_; }

  CaseSpace case_space() const override {
    CaseSpace s;
    s.dtypes = {DType::f32, DType::f16, DType::bf16, DType::f64};
    s.bshd_layout = false;  // export hands the pass [B, H, L, D]
    s.start_pos = true;
    s.max_batch_rank = 2;
    s.batch_rank_weights = {1, 8, 1};  // mostly rank 4; rank 3 and 5 for the rank guard
    // assume_causal_mask promises a causal call: cases outside it are not drawn.
    s.causal_only = options_.at("assume_causal_mask") == "true";
    s.non_finite = true;  // the model follows op_sdpa_impl.h on NaN and inf (§1.11)
    s.empty = true;       // and on zero-size dims (Lq 0: SIGFPE)
    return s;
  }

  std::optional<std::string> refuses(const Case& c) const override {
    if (c.layout != Layout::bhsd) return std::string("the llm entry form is [B, H, L, D] (layout bhsd)");
    if (c.dtype == DType::i8) return std::string("the llm target takes float calls only");
    return std::nullopt;
  }

  Graph entry(const Case& c) const override { return sdpa_entry_graph(c); }
  // pass=adapter:COMMAND: the adapter runs in place of the modeled pass.
  std::vector<const Pass*> passes() const override { return {adapter_ ? adapter_.get() : &pass_}; }
  std::vector<KernelSetInfo> kernel_sets() const override {
    return {{&kernels_, {DType::f32, DType::f16, DType::bf16, DType::f64},
             "llama.custom_sdpa model, ATen ops from LibTorch, kept SDPA as its decomposition",
             custom_ops_numerics}};
  }
  const KernelSet& baseline_kernels() const override { return naive_kernels(); }
  const KernelSet& exact_kernels() const override { return exact_; }

  std::vector<DeclaredDivergence> divergences() const override {
    return {{kFullyMaskedNan,
             "custom_sdpa gives NaN for a query row whose every key is masked (no zero-sum "
             "guard: 0 * 1/0); aten gives 0. Masks are runtime data, so no guard can rule it out."},
            {kCausalOverwrite,
             "custom_sdpa writes the causal -inf over q.k and reads no key past start_pos + Lq, so a "
             "NaN or +inf score, or an inf or NaN in V, at a causally dropped key does not reach the "
             "row; aten adds -inf and multiplies the zero weight into V: NaN. Tensor data is runtime "
             "data, so no guard can rule it out."}};
  }

  UpstreamRepro upstream_repro() const override { return llm_upstream_repro(options_); }

  std::optional<std::string> explains_nan(const Case& c, const CaseTensors& t, const Golden& g,
                                          const std::vector<int64_t>& rows,
                                          const std::string& kernel_set) const override {
    bool all_masked = true;
    const bool causal = c.is_causal || options_.at("assume_causal_mask") == "true";
    for (int64_t r : rows) {
      const bool masked = g.fully_masked.at(static_cast<size_t>(r));
      if (!masked && !(causal && causal_drop_explains(c, t, r))) return std::nullopt;
      all_masked = all_masked && masked;
    }
    return std::string(all_masked ? kFullyMaskedNan : kCausalOverwrite);
  }

  std::vector<std::string> invariants(const Case& c, const Graph& before, const Graph& after) const override {
    std::vector<std::string> out;
    const ValueInfo &a = before.info(before.outputs[0]), &b = after.info(after.outputs[0]);
    if (a.shape != b.shape || a.dtype != b.dtype)
      out.push_back("the rewritten graph returns " + print_value_info(b) + ", the original " +
                    print_value_info(a));
    return out;
  }

  // The contract rules a case breaks name the defect class of a failure;
  // "mask-cast" marks an f16/bf16 mask, which the contract converts to f32.
  // They come from the independent spec, never from the guard under test.
  std::vector<RuleOutcome> failure_facts(const Case& c) const override {
    std::vector<RuleOutcome> out;
    for (const auto& r : contract_spec(c, options_.at("assume_causal_mask") == "true"))
      if (!r.passed) out.push_back(r);
    if (c.mask && (c.mask->dtype == DType::f16 || c.mask->dtype == DType::bf16))
      out.push_back({"mask-cast", false, std::string("an ") + dtype_name(c.mask->dtype) +
                                             " mask, which custom_sdpa refuses (the contract casts it to f32)"});
    return out;
  }

 private:
  Options options_;
  ReplaceSdpaWithCustomSdpaPass pass_;
  std::unique_ptr<Pass> adapter_;
  KernelSet kernels_, exact_;
};

class LlmFactory : public TargetFactory {
 public:
  std::string name() const override { return "llm"; }
  std::string description() const override {
    return "ExecuTorch ReplaceSDPAWithCustomSDPAPass: aten SDPA to llama.custom_sdpa";
  }
  std::vector<OptionSpec> option_specs() const override {
    std::vector<std::string> weaken{"none"};
    for (const auto& [rule, name] : contract_rules()) weaken.push_back(name);
    std::vector<OptionSpec> specs = {{"guard", {"upstream", "contract"}, "contract",
             "upstream: the ExecuTorch pass as it is; contract: rewrite exactly when custom_sdpa "
             "computes what aten computes"},
            {"entry", {"sdpa"}, "sdpa", "entry form: aten SDPA [B, H, L, D] from export"},
            {"assume_causal_mask", {"false", "true"}, "false",
             "drop the mask and set is_causal (the pass's constructor argument)"},
            {"weaken", weaken, "none", "switch off one contract rule (self-tests)"},
            {"kernel_mutant", {"none", "pv-bf16-accumulation", "nan-to-zero"}, "none",
             "a deliberately wrong custom_sdpa: P @ V summed in bf16 instead of f32, or every NaN "
             "of its output written as 0 (self-tests)"},
            {"miseval", {"none", "causal-lengths", "unmasked-lengths"}, "none",
             "evaluate one contract rule wrongly: causal-lengths as Lq <= Lkv + 1, unmasked-lengths "
             "as Lq <= Lkv (self-tests)"}};
    for (auto& spec : adapter_option_specs()) specs.push_back(std::move(spec));
    return specs;
  }
  std::vector<MutantSpec> mutants() const override {
    std::vector<MutantSpec> out;
    for (const auto& [rule, name] : contract_rules()) {
      MutantSpec m{"weaken-" + name, {{"guard", "contract"}, {"weaken", name}},
                   "the contract guard without its " + name + " rule"};
      if (rule == ContractRule::assume_causal_first) m.options["assume_causal_mask"] = "true";
      if (rule == ContractRule::heads) m.what += " (aten rejects every call it keeps: no consequence)";
      out.push_back(m);
    }
    out.push_back({"pv-bf16-accumulation", {{"kernel_mutant", "pv-bf16-accumulation"}},
                   "custom_sdpa sums P @ V in bf16 (upstream: f32)"});
    out.push_back({"nan-to-zero", {{"kernel_mutant", "nan-to-zero"}},
                   "custom_sdpa writes every NaN of its output as 0 (upstream: NaN propagates)"});
    out.push_back({"miseval-causal-lengths", {{"guard", "contract"}, {"miseval", "causal-lengths"}},
                   "the contract guard testing causal-lengths as Lq <= Lkv + 1"});
    out.push_back({"miseval-unmasked-lengths", {{"guard", "contract"}, {"miseval", "unmasked-lengths"}},
                   "the contract guard testing unmasked-lengths as Lq <= Lkv"});
    return out;
  }
  std::unique_ptr<Target> make(const Options& options) const override {
    return std::make_unique<LlmTarget>(options);
  }
};

}  // namespace

std::unique_ptr<TargetFactory> make_factory() { return std::make_unique<LlmFactory>(); }

}  // namespace sdpa::llm
