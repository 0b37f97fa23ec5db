#include "harness/check/toys/toy_flash/toy_flash_target.h"

#include "harness/adapter/adapter_option.h"
#include "harness/adapter/kernel_adapter_option.h"
#include "harness/check/toys/toy_flash/fault_kernels.h"
#include "harness/io/json_reader.h"
#include "harness/ir/kernels/reference_kernels.h"

namespace sdpa::toy_flash {
namespace {

constexpr const char* kSdpa = "aten.scaled_dot_product_attention.default";
constexpr const char* kFlash = "aten._scaled_dot_product_flash_attention.default";

// _scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal,
// return_debug_mask, *, scale) -> (output, logsumexp, ...): the two outputs
// attention computes are modeled; the graph returns the output.
Graph flash_graph(const Case& c) {
  Graph g;
  ValueRef q = g.placeholder("q", {c.dtype, query_shape(c)}), k = g.placeholder("k", {c.dtype, key_shape(c)}),
           v = g.placeholder("v", {c.dtype, value_shape(c)});
  SymShape lse = output_shape(c);
  lse.pop_back();
  std::vector<std::pair<std::string, Arg>> kwargs;
  if (c.scale) kwargs.push_back({"scale", *c.scale});
  ValueRef out = g.call(kFlash, {q, k, v, c.dropout_p, c.is_causal, false}, kwargs,
                        {{c.dtype, output_shape(c)}, {DType::f32, lse}}, "flash");
  g.outputs = {out};
  return g;
}

// ReplaceFusedSdpaWithSdpaPass's core (semantics/passes.md §2): flash back
// to aten SDPA with the same q, k, v, dropout, causal flag and scale. The
// `guarded` policy keeps a causal call unless Lq == Lkv is statically known
// (flash aligns bottom-right, SDPA top-left); `unguarded` rewrites every call.
class ReplaceFlashPass : public Pass {
 public:
  explicit ReplaceFlashPass(bool guarded) : guarded_(guarded) {}
  std::string name() const override { return "replace-flash-with-sdpa"; }
  using Pass::run;
  Result run(const Graph& g, const ShapeEnv& env, const RewriteControl& control) const override {
    Result result;
    GraphRewriter rw(g);
    for (const Node& n : g.nodes) {
      if (n.op != kFlash) {
        rw.copy(n);
        continue;
      }
      GuardContext guard(env, "%" + n.name);
      const bool causal = std::get<bool>(n.args[4]);
      const SymExpr& Lq = g.info(std::get<ValueRef>(n.args[0])).shape.end()[-2];
      const SymExpr& Lkv = g.info(std::get<ValueRef>(n.args[1])).shape.end()[-2];
      if (guarded_)
        guard.rule("causal-lengths", !causal || guard.known({Lq, Rel::eq, Lkv}),
                   "causal: Lq " + Lq.str() + " == Lkv " + Lkv.str() + " statically known");
      Decision d = guard.finish();
      d.forced = !d.rewrite && control.rewrites(d);
      result.decisions.push_back(d);
      if (!control.rewrites(d)) {
        rw.copy(n);
        continue;
      }
      std::vector<std::pair<std::string, Arg>> kwargs;
      if (const Arg* s = n.kwarg("scale")) kwargs.push_back({"scale", *s});
      kwargs.push_back({"enable_gqa", true});
      ValueRef out = rw.out().call(kSdpa,
                                   {rw.map(std::get<ValueRef>(n.args[0])), rw.map(std::get<ValueRef>(n.args[1])),
                                    rw.map(std::get<ValueRef>(n.args[2])), None{}, n.args[3], n.args[4]},
                                   kwargs, {n.outputs[0]}, "sdpa");
      rw.replace(n, {out, out});  // logsumexp has no reader: the graph returns the output
    }
    result.graph = rw.finish();
    return result;
  }

 private:
  bool guarded_;
};

class ToyFlashTarget : public Target {
 public:
  explicit ToyFlashTarget(Options o)
      : options_(std::move(o)),
        pass_(options_.at("guard") == "guarded"),
        adapter_(make_adapter_pass(options_, "toy-flash", pass_.name())),
        kernels_(make_reference_kernels("portable", Numerics::emulated)) {
    add_fault(kernels_, {kFlash, kSdpa}, options_.at("fault"));
    const std::string& kernels = options_.at("kernels");
    if (kernels != "model" && !names_adapter(kernels))
      throw InputError("option 'kernels' of target toy-flash: expected model or adapter:COMMAND, got '" + kernels +
                       "'");
    adapter_kernels_ = make_adapter_kernels(options_, "toy-flash", "kernels", &kernels_);
  }

  std::string name() const override { return "toy-flash"; }
  const Options& options() const override { return options_; }
  CaseSpace case_space() const override {
    CaseSpace s;
    s.dtypes = {DType::f32};
    s.bshd_layout = false;
    s.masks = false;
    s.max_batch_rank = 1;
    s.batch_rank_weights = {0, 1};  // [B, H, L, D]
    s.causal_alignments = {CausalAlignment::bottom_right};
    return s;
  }
  std::optional<std::string> refuses(const Case& c) const override {
    if (c.layout != Layout::bhsd || c.mask || c.batch.size() != 1 || !(c.start_pos == SymExpr(0)))
      return std::string("the flash call takes [B, H, L, D] q, k, v and no mask");
    if (c.q_heads % c.kv_heads != 0) return std::string("flash groups query heads: Hq % Hkv must be 0");
    return std::nullopt;
  }
  Graph entry(const Case& c) const override { return flash_graph(c); }
  std::vector<const Pass*> passes() const override { return {adapter_ ? adapter_.get() : &pass_}; }
  std::vector<KernelSetInfo> kernel_sets() const override {
    if (adapter_kernels_) return {adapter_kernels_->info()};
    return {{&kernels_, {DType::f32}, "reference kernels in f32",
             [](const Case& c, const Graph&) {
               KernelNumerics n = KernelNumerics::naive(c.dtype);
               n.fp.split_scale = true;  // both attention kernels split sqrt(scale) into q and k
               return n;
             }}};
  }
  const KernelSet& baseline_kernels() const override { return naive_kernels(); }

 private:
  Options options_;
  ReplaceFlashPass pass_;
  std::unique_ptr<Pass> adapter_;  // pass=adapter:COMMAND in place of pass_
  KernelSet kernels_;
  std::unique_ptr<AdapterKernels> adapter_kernels_;  // kernels=adapter:COMMAND in place of kernels_
};

class ToyFlashFactory : public TargetFactory {
 public:
  std::string name() const override { return "toy-flash"; }
  std::string description() const override { return "a direct flash call (bottom-right causal) to aten SDPA"; }
  std::vector<OptionSpec> option_specs() const override {
    std::vector<OptionSpec> specs = {
        {"guard", {"guarded", "unguarded"}, "guarded",
         "guarded: keep causal calls unless Lq == Lkv statically; unguarded: rewrite every call"},
        {"entry", {"flash"}, "flash", "entry form: aten._scaled_dot_product_flash_attention"},
        {"fault", fault_names(), "none",
         "the kernels, for Lq >= 5: segfault, abort, hang (loop forever), alloc (without bound), segfault-once "
         "(the first time only, in any process: $TOY_FLASH_ONCE_FILE marks it); none"}};
    specs.push_back({"kernels", {}, "model",
                     "model: the reference kernels; adapter:COMMAND: kernel set `adapter`, its ops computed by "
                     "COMMAND (docs/adapters.md)"});
    for (auto& spec : adapter_option_specs()) specs.push_back(std::move(spec));
    for (auto& spec : kernel_adapter_option_specs()) specs.push_back(std::move(spec));
    return specs;
  }
  std::vector<MutantSpec> mutants() const override {
    return {{"unguarded", {{"guard", "unguarded"}}, "rewrites causal calls with Lq != Lkv (top-left for bottom-right)"}};
  }
  std::unique_ptr<Target> make(const Options& options) const override {
    return std::make_unique<ToyFlashTarget>(options);
  }
};

}  // namespace

std::unique_ptr<TargetFactory> make_factory() { return std::make_unique<ToyFlashFactory>(); }

}  // namespace sdpa::toy_flash
