#include "backends/llm/llm_target.h"

#include <algorithm>

#include "backends/common/libtorch_kernels.h"
#include "backends/common/sdpa_entry.h"
#include "backends/llm/contract_spec.h"
#include "backends/llm/custom_sdpa_kernel.h"
#include "backends/llm/llm_divergences.h"
#include "backends/llm/llm_kernels.h"
#include "backends/llm/llm_upstream_repro.h"
#include "backends/llm/replace_sdpa_pass.h"
#include "backends/llm/sdpa_custom_pass.h"
#include "backends/llm/sdpa_custom_target.h"
#include "harness/adapter/adapter_option.h"
#include "harness/io/json_reader.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::llm {
namespace {

// custom_sdpa on the activation dtype: P rounded to it before P @ V.
KernelNumerics custom_ops_numerics(const Case& c, const Graph& g) { return custom_sdpa_numerics(c, g, c.dtype); }

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
  c.revision = et_revision_option(o);
  return c;
}

class LlmTarget : public Target {
 public:
  explicit LlmTarget(Options options)
      : options_(std::move(options)),
        pass_(config_of(options_)),
        adapter_(make_adapter_pass(options_, "llm", pass_.name())),
        kernels_(custom_ops_kernels(kernel_mutants().at(options_.at("kernel_mutant")), threads_option(options_),
                                    et_revision_option(options_))),
        exact_(exact_custom_ops(threads_option(options_), et_revision_option(options_))) {}

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

  Graph entry(const Case& c) const override { return sdpa_entry_graph(c, call_form()); }
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
    return custom_sdpa_divergences(et_revision_option(options_));
  }

  UpstreamRepro upstream_repro() const override { return llm_upstream_repro(options_); }

  // The pass emits start_pos 0: custom_sdpa runs causal top-left. The
  // upstream pass drops a mask and is_causal given by keyword.
  std::optional<std::string> explains_nan(const Case& c, const CaseTensors& t, const Golden& g,
                                          const std::vector<int64_t>& rows, const std::string& kernel_set,
                                          const Graph& ran) const override {
    if (ran.count(kCustomSdpaOp) == 0) return std::nullopt;
    const bool assume_causal = options_.at("assume_causal_mask") == "true";
    const bool dropped = drops_keyword_args();
    return explain_custom_sdpa_nan(c, t, g, rows,
                                   {assume_causal || (c.is_causal && !dropped),
                                    c.mask.has_value() && !assume_causal && !dropped, 0,
                                    threads_option(options_), et_revision_option(options_).nan_for_masked_block,
                                    kernel_set != "exact"});
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
    for (const auto& r : contract_spec(c, options_.at("assume_causal_mask") == "true", et_revision_option(options_)))
      if (!r.passed) out.push_back(r);
    if (c.mask && (c.mask->dtype == DType::f16 || c.mask->dtype == DType::bf16))
      out.push_back({"mask-cast", false, std::string("an ") + dtype_name(c.mask->dtype) +
                                             " mask, which custom_sdpa refuses (the contract casts it to f32)"});
    if (drops_keyword_args() && (c.mask || c.is_causal))
      out.push_back({"keyword-args", false,
                     "attn_mask or is_causal given by keyword, which the export pass reads by position "
                     "only (§2.1 item 1): it drops them"});
    return out;
  }

 private:
  CallForm call_form() const {
    return options_.at("call_form") == "keyword" ? CallForm::keyword : CallForm::positional;
  }
  // The upstream pass reads attn_mask and is_causal by position only, so a
  // keyword node loses them (assume_causal_mask replaces both anyway).
  bool drops_keyword_args() const {
    return call_form() == CallForm::keyword && options_.at("guard") == "upstream" &&
           options_.at("assume_causal_mask") != "true";
  }

  Options options_;
  ReplaceSdpaWithCustomSdpaPass pass_;
  std::unique_ptr<Pass> adapter_;
  KernelSet kernels_, exact_;
};

class LlmFactory : public TargetFactory {
 public:
  std::string name() const override { return "llm"; }
  std::string description() const override {
    return "ExecuTorch ReplaceSDPAWithCustomSDPAPass: aten SDPA to llama.custom_sdpa; with "
           "entry=sdpa-custom, replace_sdpa_with_custom_op: llama's SDPA module in a KV-cache step "
           "swapped for SDPACustom";
  }
  std::vector<OptionSpec> option_specs() const override {
    std::vector<std::string> weaken{"none"};
    for (const auto& [rule, name] : contract_rules()) weaken.push_back(name);
    for (const auto& [rule, name] : swap_rules())
      if (std::find(weaken.begin(), weaken.end(), name) == weaken.end()) weaken.push_back(name);
    std::vector<std::string> revisions;
    for (const auto& [name, revision] : et_revisions()) revisions.push_back(name);
    std::vector<std::string> faults;
    for (const auto& [name, fault] : kernel_mutants()) faults.push_back(name);
    std::vector<OptionSpec> specs = {{"guard", {"upstream", "contract"}, "contract",
             "upstream: the ExecuTorch pass (or swap) as it is; contract: rewrite exactly when "
             "custom_sdpa computes what aten computes"},
            {"entry", {"sdpa", "sdpa-custom"}, "sdpa",
             "entry form: aten SDPA [B, H, L, D] from export (ReplaceSDPAWithCustomSDPAPass), or "
             "llama's SDPA module in a KV-cache step at input_pos[0] (replace_sdpa_with_custom_op)"},
            {"assume_causal_mask", {"false", "true"}, "false",
             "drop the mask and set is_causal (the export pass's constructor argument; entry=sdpa)"},
            {"use_attention_mask", {"false", "true"}, "false",
             "SDPACustom's constructor argument (entry=sdpa-custom): false calls custom_sdpa causal at "
             "input_pos[0] without the mask, true passes the module's mask as is with start_pos 0"},
            {"weaken", weaken, "none", "switch off one contract rule of the entry form's pass (self-tests)"},
            {"threads", {"1", "2", "4", "8"}, "1",
             "threads of the ExecuTorch threadpool custom_sdpa runs on (1: a build without one): "
             "query blocks one thread runs in turn share their row sums (§1.11)"},
            {"call_form", {"positional", "keyword"}, "positional",
             "entry=sdpa: the SDPA node's attn_mask, dropout_p and is_causal by position, as torch.export "
             "writes them, or by keyword, as a graph pass that emits the node with keywords writes them"},
            {"executorch", revisions, "main",
             "the ExecuTorch tree modelled: main (cff6f4dd32), 2026-07-07 (before 411a01e1b9: custom_sdpa and "
             "its Meta kernel take float32 only), 2025-07-01 (also before 9905026101: the mask has q's dtype), "
             "2025-04-24 (also before f3e8972de6: a kv block with no kept key yet gives NaN; entry=sdpa-custom "
             "only, the export pass came on 2025-04-28)"},
            {"kernel_mutant", faults, "none",
             "a deliberately wrong custom_sdpa (self-tests): P @ V summed in bf16 instead of f32, every "
             "NaN of its output written as 0, the causal fill without start_pos, or the kv loop "
             "ending at m + qBlockSize"},
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
    for (auto& m : sdpa_custom_mutants()) out.push_back(std::move(m));
    return out;
  }
  // Each entry form has its own pass: an option of the other one is an error.
  std::unique_ptr<Target> make(const Options& options) const override {
    const bool swap = options.at("entry") == "sdpa-custom";
    auto misplaced = [&](const std::string& option, const std::string& value, const std::string& entry) {
      if (options.at(option) != value)
        throw InputError("option '" + option + "' of target llm applies to entry=" + entry + " only");
    };
    if (swap) {
      misplaced("assume_causal_mask", "false", "sdpa");
      misplaced("miseval", "none", "sdpa");
      misplaced("pass", "model", "sdpa");
      misplaced("call_form", "positional", "sdpa");
      const std::string& w = options.at("weaken");
      if (w != "none" && !parse_swap_rule(w))
        throw InputError("option 'weaken' of target llm with entry=sdpa-custom: expected none or a swap rule, got '" +
                         w + "'");
      return make_sdpa_custom_target(options);
    }
    misplaced("use_attention_mask", "false", "sdpa-custom");
    if (!et_revision_option(options).has_export_pass)
      throw InputError("option 'executorch' of target llm: ReplaceSDPAWithCustomSDPAPass was added on 2025-04-28 "
                       "(7054b1f955), so entry=sdpa needs a later tree than " + options.at("executorch") +
                       " (entry=sdpa-custom runs on it)");
    const std::string& w = options.at("weaken");
    if (w != "none" && !parse_rule(w))
      throw InputError("option 'weaken' of target llm with entry=sdpa: expected none or a contract rule, got '" + w + "'");
    return std::make_unique<LlmTarget>(options);
  }
};

}  // namespace

std::unique_ptr<TargetFactory> make_factory() { return std::make_unique<LlmFactory>(); }

}  // namespace sdpa::llm
