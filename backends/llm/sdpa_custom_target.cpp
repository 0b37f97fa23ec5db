#include "backends/llm/sdpa_custom_target.h"

#include "backends/llm/custom_sdpa_kernel.h"
#include "backends/llm/llm_divergences.h"
#include "backends/llm/llm_kernels.h"
#include "backends/llm/sdpa_custom_entry.h"
#include "backends/llm/sdpa_custom_pass.h"
#include "backends/llm/sdpa_custom_spec.h"
#include "harness/ir/graph_printer.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::llm {
namespace {

SwapConfig swap_config_of(const Options& o) {
  SwapConfig c;
  c.policy = o.at("guard") == "contract" ? GuardPolicy::contract : GuardPolicy::upstream;
  c.use_attention_mask = o.at("use_attention_mask") == "true";
  c.weakened = parse_swap_rule(o.at("weaken"));
  return c;
}

// SDPACustom runs custom_sdpa on f32 casts of q, k and v: P stays f32, and
// only the output is rounded back to the case dtype. A kept module runs
// aten SDPA as its math decomposition.
KernelNumerics swap_numerics(const Case& c, const Graph& g) { return custom_sdpa_numerics(c, g, DType::f32); }

class SdpaCustomTarget : public Target {
 public:
  explicit SdpaCustomTarget(Options options)
      : options_(std::move(options)),
        config_(swap_config_of(options_)),
        pass_(config_),
        kernels_(custom_ops_kernels(kernel_mutants().at(options_.at("kernel_mutant")), threads_option(options_),
                                    et_revision_option(options_))),
        exact_(exact_custom_ops(threads_option(options_), et_revision_option(options_))) {}

  std::string name() const override { return "llm"; }
  const Options& options() const override { return options_; }

  CaseSpace case_space() const override {
    CaseSpace s;
    s.dtypes = {DType::f32, DType::f16, DType::bf16};  // what a llama model runs in
    s.bshd_layout = false;                             // the module takes [B, H, S, D]
    s.start_pos = true;
    s.kv_cache = true;  // a decode or chunked-prefill step at input_pos[0]
    s.causal_alignments = {CausalAlignment::start_pos};
    s.max_batch_rank = 1;
    s.batch_rank_weights = {0, 1};
    s.dropout = false;             // SDPA(..., dropout_p=0.0)
    s.explicit_scale = false;      // the default scale
    s.distinct_value_dim = false;  // one head_dim for k and v
    s.non_finite = true;           // the model follows op_sdpa_impl.h on NaN and inf (§1.11)
    return s;
  }

  std::optional<std::string> refuses(const Case& c) const override { return sdpa_custom_refuses(c); }
  Graph entry(const Case& c) const override { return sdpa_custom_entry_graph(c); }

  std::map<std::string, Tensor> inputs(const Case& c, const CaseTensors& t) const override {
    std::map<std::string, Tensor> in = Target::inputs(c, t);
    Tensor pos(DType::i64, {1});
    pos.data[0] = static_cast<double>(t.start_pos);
    in[kInputPos] = pos;
    return in;
  }

  std::vector<const Pass*> passes() const override { return {&pass_}; }
  std::vector<KernelSetInfo> kernel_sets() const override {
    return {{&kernels_, {DType::f32, DType::f16, DType::bf16},
             "llama.custom_sdpa model on SDPACustom's f32 casts, ATen ops from LibTorch, a kept module's "
             "SDPA as its decomposition",
             swap_numerics}};
  }
  const KernelSet& baseline_kernels() const override { return naive_kernels(); }
  const KernelSet& exact_kernels() const override { return exact_; }

  std::vector<DeclaredDivergence> divergences() const override {
    return custom_sdpa_divergences(et_revision_option(options_));
  }

  // Without the mask SDPACustom runs custom_sdpa causal at input_pos[0].
  std::optional<std::string> explains_nan(const Case& c, const CaseTensors& t, const Golden& g,
                                          const std::vector<int64_t>& rows, const std::string& kernel_set,
                                          const Graph& ran) const override {
    if (ran.count(kCustomSdpaOp) == 0) return std::nullopt;
    const bool masked = config_.use_attention_mask && t.mask.has_value();
    return explain_custom_sdpa_nan(c, t, g, rows,
                                   {!config_.use_attention_mask, masked, t.start_pos, threads_option(options_),
                                    et_revision_option(options_).nan_for_masked_block, kernel_set != "exact"});
  }

  std::vector<std::string> invariants(const Case& c, const Graph& before, const Graph& after) const override {
    std::vector<std::string> out;
    const ValueInfo &a = before.info(before.outputs[0]), &b = after.info(after.outputs[0]);
    if (a.shape != b.shape || a.dtype != b.dtype)
      out.push_back("the swapped graph returns " + print_value_info(b) + ", the original " + print_value_info(a));
    return out;
  }

  // The swap rules a case breaks, from the independent spec.
  std::vector<RuleOutcome> failure_facts(const Case& c) const override {
    std::vector<RuleOutcome> out;
    for (const auto& r : sdpa_custom_spec(c, config_.use_attention_mask))
      if (!r.passed) out.push_back(r);
    return out;
  }

 private:
  Options options_;
  SwapConfig config_;
  ReplaceSdpaWithCustomOpPass pass_;
  KernelSet kernels_, exact_;
};

}  // namespace

std::unique_ptr<Target> make_sdpa_custom_target(const Options& options) {
  return std::make_unique<SdpaCustomTarget>(options);
}

std::vector<MutantSpec> sdpa_custom_mutants() {
  const Options entry{{"entry", "sdpa-custom"}};
  std::vector<MutantSpec> out;
  for (const auto& [rule, name] : swap_rules()) {
    MutantSpec m{"weaken-swap-" + name, entry, "the swap's contract guard without its " + name + " rule"};
    m.options["guard"] = "contract";
    m.options["weaken"] = name;
    const bool masked = rule == SwapRule::mask_rank || rule == SwapRule::mask_dtype || rule == SwapRule::mask_shape;
    if (masked) m.options["use_attention_mask"] = "true";
    if (rule == SwapRule::cache_bounds)
      m.what += " (no run the entry form takes passes the cache: no consequence)";
    out.push_back(m);
  }
  MutantSpec offset{"causal-offset-ignores-start-pos", entry,
                    "custom_sdpa's causal fill without start_pos: row i keeps j <= i (upstream: j <= start_pos + i)"};
  offset.options["kernel_mutant"] = "causal-offset-ignores-start-pos";
  out.push_back(offset);
  MutantSpec keys{"num-keys-without-start-pos", entry,
                  "custom_sdpa's kv loop to min(m + qBlockSize, kvSize): the blocks past 512 keys go unread "
                  "(upstream: min(m + start_pos + qBlockSize, kvSize))"};
  keys.options["kernel_mutant"] = "num-keys-without-start-pos";
  out.push_back(keys);
  return out;
}

}  // namespace sdpa::llm
