#include "backends/xnnpack/xnnpack_target.h"

#include <algorithm>
#include <cmath>

#include "backends/common/sdpa_entry.h"
#include "backends/xnnpack/convert_to_sdpa_pass.h"
#include "backends/xnnpack/lift_scalars_pass.h"
#include "backends/xnnpack/pattern_entry.h"
#include "backends/xnnpack/remove_noop_expand_copy_pass.h"
#include "backends/xnnpack/sdpa_pattern.h"
#include "backends/xnnpack/xnnpack_kernels.h"
#include "backends/xnnpack/xnnpack_partition.h"

namespace sdpa::xnnpack {
namespace {

constexpr const char* kFullyMaskedNan = "fully-masked-row-nan";
// PR #20515 at 257ef3a853: the lift without its guard, and ConvertToSDPAPass
// matching the lifted pattern copies too.
constexpr const char* kLateLift = "lift-257ef3a853";

std::string number(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

DType graph_dtype(const Graph& g) { return g.info(g.outputs.at(0)).dtype; }

class XnnpackTarget : public Target {
 public:
  explicit XnnpackTarget(Options o)
      : options_(std::move(o)),
        upstream_flow_(options_.at("flow") == "upstream"),
        remove_noop_(options_.at("mutant") != "noop-expand-unchecked"),
        late_lift_(options_.at("guard") == kLateLift),
        lift_(options_.at("mutant") != "lift-unguarded" && !late_lift_),
        convert_(recovery(), pattern_forms()),
        convert_per_delegate_(recovery(), kernel_set_delegates(), pattern_forms()),
        xnnpack_(make_xnnpack_kernels()),
        exact_(make_edge_reference_kernels("exact", Numerics::exact)),
        naive_(make_edge_reference_kernels("naive", Numerics::naive)) {}

  std::string name() const override { return "xnnpack"; }
  const Options& options() const override { return options_; }

  CaseSpace case_space() const override {
    CaseSpace s;
    s.dtypes = {DType::f32, DType::f16};
    s.bshd_layout = false;
    s.dropout = false;
    s.max_batch_rank = 2;
    s.batch_rank_weights = {1, 4, 1};  // 3-D [H, L, D], mostly 4-D [B, H, L, D]
    if (options_.at("entry") == "pattern") {
      s.variants = {{"qk", 1}};
    } else {
      for (const auto& v : pattern_variants()) s.variants.push_back({v.name, v.name == "qk" ? 6.0 : 1.0});
    }
    return s;
  }

  std::optional<std::string> refuses(const Case& c) const override {
    if (c.dtype != DType::f32 && c.dtype != DType::f16)
      return std::string("the XNNPACK pattern graphs are fp32 and fp16");
    if (c.layout != Layout::bhsd || !(c.start_pos == SymExpr(0)) || c.dropout_p > 0 || c.is_causal)
      return std::string("the traced pattern is a [..., H, L, D] call without causal, dropout or KV-cache position");
    if (c.kv_heads != c.q_heads && c.kv_heads != 1 && !c.enable_gqa)
      return std::string("grouped heads without enable_gqa: aten's matmul does not broadcast them");
    if (c.mask && c.mask->dtype != DType::b8 && c.mask->dtype != c.dtype)
      return std::string("an additive mask must have the call's dtype (the pattern's add and XNNPACK take one dtype)");
    return std::nullopt;
  }

  Graph entry(const Case& c) const override { return pattern_entry_graph(c); }

  // The traced graph multiplies by its literals as the op math reads them
  // (rounded to f32): it means their product.
  Case meaning(const Case& c) const override {
    Case m = c;
    m.scale = traced_scale(c);
    return m;
  }

  // "scale": a converted SDPA's scale keyword, else the product of the
  // graph's scalar factors (lifted 0-dim constants, then the literals as the
  // op math reads them). A buffer or keyword comes first: the checker puts a
  // value back into the first site, and only those hold it unrounded.
  std::vector<GraphConstant> constants(const Graph& g) const override {
    const DType t = graph_dtype(g);
    std::vector<GraphConstant> out;
    for (const Node& n : g.nodes)
      if (n.op == kSdpaOp)
        if (const Arg* s = n.kwarg("scale"); s && std::holds_alternative<double>(*s))
          out.push_back({"scale", std::get<double>(*s), t, {{n.name, "scale"}}});
    if (!out.empty()) return out;
    GraphConstant scale{"scale", 1.0, t};
    std::vector<ConstantSite> literals;
    for (const Node& n : g.nodes) {
      if (n.op == kMulScalar && n.args.size() == 2 && std::holds_alternative<double>(n.args[1])) {
        scale.value *= op_math_literal(std::get<double>(n.args[1]));
        literals.push_back({n.name, "", 1});
      } else if (n.op == kMulTensor && n.args.size() == 2) {
        const auto* c = std::get_if<ValueRef>(&n.args[1]);
        if (!c || g.nodes[c->node].op != "get_attr") continue;
        const std::string& buffer = std::get<std::string>(g.nodes[c->node].args[0]);
        const Tensor& value = g.constants.at(buffer);
        if (value.numel() != 1) continue;
        scale.value *= value.data[0];
        scale.sites.push_back({"", "", -1, buffer});
      }
    }
    scale.sites.insert(scale.sites.end(), literals.begin(), literals.end());
    if (scale.sites.empty()) return {};
    return {scale};
  }

  // pattern-graph: the lift (if any), then ConvertToSDPAPass on the whole
  // traced graph. upstream: RemoveNoopExpandCopyPass and the lift before
  // partitioning, then ConvertToSDPAPass on each delegate.
  std::vector<const Pass*> passes() const override {
    std::vector<const Pass*> out;
    if (upstream_flow_) out.push_back(&remove_noop_);
    if (options_.at("guard") != "none") out.push_back(&lift_);
    out.push_back(upstream_flow_ ? &convert_per_delegate_ : &convert_);
    return out;
  }

  // The upstream pipeline a repro script could run: none whole (cortex-m-and-xnnpack.md sections 0, 3).
  UpstreamRepro upstream_repro() const override {
    UpstreamRepro u;
    u.model = "ConvertToSDPAPass's SDPA on the XNNPACK library";
    u.entry_points = {
        "executorch.backends.xnnpack._passes.convert_to_sdpa.ConvertToSDPAPass: in XNNPACKPassManager's default "
        "list, run by xnnpack_preprocess on each delegated subgraph (semantics cortex-m-and-xnnpack.md section "
        "3.2); its module _passes is private to the XNNPACK backend",
        "the XNNPACK SDPA node visitor and runtime were deleted from ExecuTorch (#11506) and XNNPACK removed its "
        "SDPA operator (764f7826eb): the SDPA ConvertToSDPAPass emits has no upstream kernel to run in main "
        "(sections 0, 3.3); sdpacheck runs the operator from the XNNPACK library it is built with"};
    if (options_.at("guard") != "none")
      u.entry_points.push_back(
          "LiftConstantScalarOperandsPass (option guard=" + options_.at("guard") +
          "): ExecuTorch PR #20515, not in ExecuTorch main at the snapshot; merged later and backed out by #22942 "
          "(section 0)");
    u.probes = {"executorch.backends.xnnpack._passes.convert_to_sdpa"};
    u.not_run = "the SDPA ConvertToSDPAPass emits has no XNNPACK visitor or runtime in ExecuTorch main: the script "
                "does not run the XNNPACK pipeline";
    if (options_.at("mutant") != "none") u.deviations.push_back(self_test_deviation("mutant", options_.at("mutant")));
    return u;
  }

  std::vector<KernelSetInfo> kernel_sets() const override {
    return {{&xnnpack_, {DType::f32, DType::f16},
             "real XNNPACK (bmm via fully-connected, f32 softmax, multiply), XNNPACK SDPA operator model, "
             "portable kernels for the rest",
             xnnpack_numerics}};
  }
  const KernelSet& exact_kernels() const override { return exact_; }
  const KernelSet& baseline_kernels() const override { return naive_; }

  // The pass-order property (every pattern that matched before the lift is
  // converted), and the recovered scale against the call's, in ulps and sign.
  std::vector<std::string> invariants(const Case& c, const Graph& before, const Graph& after) const override {
    std::vector<std::string> out;
    // Upstream the lift receives the graph RemoveNoopExpandCopyPass left, and
    // a match that survives it stays unconverted (no delegate holds it whole).
    const size_t matched = match_sdpa_pattern(lift_input(c, before)).size();
    size_t kept = static_cast<size_t>(after.count(kSdpaOp));
    if (upstream_flow_) kept += match_sdpa_pattern(after, pattern_forms()).size();
    if (kept < matched)
      out.push_back("pass order: " + std::to_string(matched - kept) + " of " + std::to_string(matched) +
                    " SDPA pattern match(es) of " +
                    (upstream_flow_ ? "the graph RemoveNoopExpandCopyPass left broken"
                                    : "the entry graph not converted") +
                    " after LiftConstantScalarOperandsPass");
    const double truth = c.effective_scale();
    const DType t = graph_dtype(after);
    for (const Node& n : after.nodes) {
      if (n.op != kSdpaOp) continue;
      const Arg* s = n.kwarg("scale");
      if (!s || !std::holds_alternative<double>(*s)) continue;
      const double got = std::get<double>(*s);
      if (truth != 0.0 && std::signbit(got) != std::signbit(truth)) {
        out.push_back("scale not recovered: %" + n.name + " has scale " + number(got) + ", the call " +
                      number(truth) + " (sign lost)");
        continue;
      }
      // Steps of the dtype's grid between the two, counted at the smaller
      // magnitude (below a power of two the grid is twice as fine).
      const double a = round_to(t, got), b = round_to(t, truth);
      const double ulps = (a - b) / ulp(t, std::min(std::fabs(a), std::fabs(b)));
      if (ulps != 0.0)
        out.push_back("scale not recovered: %" + n.name + " has scale " + number(got) + " (" +
                      number(round_to(t, got)) + " in " + dtype_name(t) + "), the call " + number(truth) + ": " +
                      number(ulps) + " ulp of " + dtype_name(t));
    }
    return out;
  }

  // Nodes the xnnpack kernel set runs on the library and on portable
  // kernels, the SDPA patterns of the entry graph (as traced, before the
  // lift) and the SDPA nodes the passes made of them.
  std::map<std::string, int64_t> counters(const Case& c, const Graph& entry, const Graph& rewritten) const override {
    const PartitionCounts p = partition_counts(rewritten);
    std::map<std::string, int64_t> out = {{"delegated nodes", p.delegated},
                                          {"portable nodes", p.portable},
                                          {"patterns traced", static_cast<int64_t>(match_sdpa_pattern(entry).size())},
                                          {"converted to SDPA", rewritten.count(kSdpaOp)}};
    if (upstream_flow_)
      out["patterns after RemoveNoopExpandCopyPass"] =
          static_cast<int64_t>(match_sdpa_pattern(lift_input(c, entry)).size());
    return out;
  }

  std::vector<DeclaredDivergence> divergences() const override {
    return {{kFullyMaskedNan,
             "XNNPACK's SDPA operator gives NaN for a row whose every logit is -inf (m = -inf, S - m = NaN); "
             "aten gives 0 (semantics §4.3)"}};
  }
  // Only the SDPA operator gives the NaN: a graph left decomposed runs
  // _safe_softmax, which gives 0 there.
  std::optional<std::string> explains_nan(const Case&, const CaseTensors&, const Golden& g,
                                          const std::vector<int64_t>& rows, const std::string& kernel_set,
                                          const Graph& ran) const override {
    if (kernel_set != "xnnpack" || ran.count(kSdpaOp) == 0) return std::nullopt;
    for (int64_t r : rows)
      if (!g.fully_masked.at(static_cast<size_t>(r))) return std::nullopt;
    return std::string(kFullyMaskedNan);
  }

 private:
  PatternForms pattern_forms() const { return late_lift_ ? PatternForms::scalar_and_lifted : PatternForms::scalar; }
  ScaleRecovery recovery() const {
    return options_.at("mutant") == "recovery-one-ulp" ? ScaleRecovery::one_ulp_up : ScaleRecovery::upstream;
  }
  // The graph LiftConstantScalarOperandsPass receives in this flow.
  Graph lift_input(const Case& c, const Graph& entry) const {
    return upstream_flow_ ? remove_noop_.run(entry, c.shape_env()).graph : entry;
  }

  Options options_;
  bool upstream_flow_;
  RemoveNoopExpandCopyPass remove_noop_;
  bool late_lift_;
  LiftConstantScalarOperandsPass lift_;
  ConvertToSDPAPass convert_, convert_per_delegate_;
  KernelSet xnnpack_, exact_, naive_;
};

class XnnpackFactory : public TargetFactory {
 public:
  std::string name() const override { return "xnnpack"; }
  std::string description() const override {
    return "ExecuTorch XNNPACK backend: traced attention patterns through LiftConstantScalarOperandsPass and "
           "ConvertToSDPAPass, on the real XNNPACK library";
  }
  std::vector<OptionSpec> option_specs() const override {
    return {{"guard", {"none", "lift", kLateLift}, "lift",
             "none: ConvertToSDPAPass alone (snapshot main); lift: LiftConstantScalarOperandsPass (PR #20515 at "
             "9eac80e90c, merged and then backed out by #22942) before it; lift-257ef3a853: the PR during review, its "
             "lift without the _feeds_sdpa_qk_bmm guard and ConvertToSDPAPass matching the lifted pattern too"},
            {"flow", {"pattern-graph", "upstream"}, "pattern-graph",
             "pattern-graph: ConvertToSDPAPass on the whole traced graph (the design flow, semantics/passes.md §4); "
             "upstream: RemoveNoopExpandCopyPass and the lift before partitioning, ConvertToSDPAPass on each "
             "delegate (upstream's default flow, where it never converts)"},
            {"entry", {"pattern", "all"}, "all",
             "pattern: the partitioner's pattern graph form only (variant qk); all: every variant (scale on q or "
             "on the scores, no-op expands removed, a clone / transpose / _to_copy between a MUL and its bmm)"},
            {"mutant", {"none", "recovery-one-ulp", "lift-unguarded", "noop-expand-unchecked"}, "none",
             "a deliberately wrong pass (self-tests): the recovered scale one ulp up, the lift without its "
             "_feeds_sdpa_qk_bmm guard, or RemoveNoopExpandCopyPass removing broadcasting expands too (flow=upstream)"}};
  }
  std::vector<MutantSpec> mutants() const override {
    return {{"recovery-one-ulp", {{"mutant", "recovery-one-ulp"}, {"entry", "pattern"}, {"flow", "pattern-graph"}},
             "ConvertToSDPAPass recovers a scale one ulp of the graph dtype too large"},
            {"lift-unguarded",
             {{"mutant", "lift-unguarded"}, {"guard", "lift"}, {"entry", "pattern"}, {"flow", "pattern-graph"}},
             "LiftConstantScalarOperandsPass lifts the scale MULs the SDPA pattern needs"},
            {"noop-expand-unchecked", {{"mutant", "noop-expand-unchecked"}, {"flow", "upstream"}},
             "RemoveNoopExpandCopyPass removes an expand_copy that broadcasts one key/value head"}};
  }
  std::unique_ptr<Target> make(const Options& options) const override {
    return std::make_unique<XnnpackTarget>(options);
  }
};

}  // namespace

std::unique_ptr<TargetFactory> make_factory() { return std::make_unique<XnnpackFactory>(); }

}  // namespace sdpa::xnnpack
