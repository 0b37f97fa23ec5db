// Models replace_sdpa_with_custom_op and SDPACustom (executorch main
// cff6f4dd32, examples/models/llama/source_transformation/sdpa.py) as policy
// `upstream` (the swap is unconditional), and the conditions under which
// the swap computes what the SDPA module computes as policy `contract`.
#include "backends/llm/sdpa_custom_pass.h"

#include <map>
#include <set>
#include <stdexcept>

#include "backends/common/sdpa_entry.h"
#include "backends/llm/custom_sdpa_kernel.h"
#include "backends/llm/custom_sdpa_meta.h"
#include "backends/llm/sdpa_custom_entry.h"

namespace sdpa::llm {

const std::vector<std::pair<SwapRule, std::string>>& swap_rules() {
  static const std::vector<std::pair<SwapRule, std::string>> rules = {
      {SwapRule::query_length, "query-length"}, {SwapRule::causal_slice, "causal-slice"},
      {SwapRule::cache_bounds, "cache-bounds"}, {SwapRule::mask_rank, "mask-rank"},
      {SwapRule::mask_dtype, "mask-dtype"},     {SwapRule::mask_shape, "mask-shape"}};
  return rules;
}

std::optional<SwapRule> parse_swap_rule(const std::string& name) {
  for (const auto& [rule, rule_name] : swap_rules())
    if (rule_name == name) return rule;
  return std::nullopt;
}

namespace {

std::string rule_name(SwapRule r) {
  for (const auto& [rule, name] : swap_rules())
    if (rule == r) return name;
  return "?";
}

const ValueRef* ref_arg(const Node& n, size_t i) {
  return i < n.args.size() ? std::get_if<ValueRef>(&n.args[i]) : nullptr;
}

bool int_arg(const Node& n, size_t i, int64_t want) {
  if (i >= n.args.size()) return false;
  const int64_t* v = std::get_if<int64_t>(&n.args[i]);
  return v && *v == want;
}

// The one user of node `index`, if it has exactly one and it calls `op`.
int only_user(const Graph& g, int index, const std::string& op) {
  const std::vector<int> users = g.users(index);
  if (users.size() != 1 || g.nodes[users[0]].op != op) return -1;
  for (const ValueRef& o : g.outputs)
    if (o.node == index) return -1;
  return users[0];
}

// repeat_interleave(x, n, 1) read only by node `user`: returns x's node index.
int repeat_of(const Graph& g, const ValueRef* v, int user) {
  if (!v) return -1;
  const Node& n = g.nodes[v->node];
  if (n.op != kRepeatInterleaveOp || !int_arg(n, 2, 1) || g.users(v->node) != std::vector<int>{user}) return -1;
  return v->node;
}

// input_pos[0].item(): the symbol the graph binds to it.
std::optional<SymExpr> input_pos_symbol(const Graph& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const ValueRef* sel = ref_arg(n, 0);
    if (n.op != kItemOp || !sel) continue;
    const Node& s = g.nodes[sel->node];
    const ValueRef* pos = ref_arg(s, 0);
    if (s.op != kSelectOp || !pos || !int_arg(s, 1, 0) || !int_arg(s, 2, 0)) continue;
    const Node& p = g.nodes[pos->node];
    if (p.op != "placeholder" || std::get<std::string>(p.args.at(0)) != kInputPos) continue;
    if (const Arg* b = n.kwarg("binds"))
      if (const auto* e = std::get_if<SymExpr>(b)) return *e;
  }
  return std::nullopt;
}

bool is_causal_buffer(const Tensor& t) {
  if (t.dtype != DType::b8 || t.dim() != 2 || t.shape[0] != t.shape[1]) return false;
  const int64_t n = t.shape[0];
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      if ((t.data[i * n + j] != 0.0) != (j <= i)) return false;
  return true;
}

}  // namespace

std::vector<SdpaModule> find_sdpa_modules(const Graph& g) {
  std::vector<SdpaModule> out;
  const std::optional<SymExpr> start_pos = input_pos_symbol(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op != kSdpaOp) continue;
    SdpaModule m;
    m.sdpa = static_cast<int>(i);
    m.repeat_k = repeat_of(g, ref_arg(n, 1), m.sdpa);
    m.repeat_v = repeat_of(g, ref_arg(n, 2), m.sdpa);
    m.transpose = only_user(g, m.sdpa, "aten.transpose.int");
    if (!ref_arg(n, 0) || m.repeat_k < 0 || m.repeat_v < 0 || m.repeat_k == m.repeat_v || m.transpose < 0) continue;
    const Node& t = g.nodes[m.transpose];
    if (!int_arg(t, 1, 1) || !int_arg(t, 2, 2)) continue;
    m.contiguous = only_user(g, m.transpose, "aten.contiguous.default");
    if (m.contiguous < 0) continue;
    const std::vector<int> view_users = g.users(m.contiguous);
    if (view_users.size() != 1 || g.nodes[view_users[0]].op != "aten.view.default") continue;
    m.view = view_users[0];
    m.q = *ref_arg(n, 0);
    m.k = *ref_arg(g.nodes[m.repeat_k], 0);
    m.v = *ref_arg(g.nodes[m.repeat_v], 0);
    if (const ValueRef* mask = ref_arg(n, 3)) m.mask = *mask;
    m.start_pos = start_pos;
    out.push_back(m);
  }
  return out;
}

std::optional<SymExpr> causal_slice_start(const Graph& g, const SdpaModule& m) {
  if (!m.mask || !m.start_pos) return std::nullopt;
  const Node& s = g.nodes[m.mask->node];
  const ValueRef* buffer = ref_arg(s, 0);
  if (s.op != kSliceOp || !buffer || !int_arg(s, 1, 0) || !int_arg(s, 4, 1) || s.args.size() != 5) return std::nullopt;
  const Node& b = g.nodes[buffer->node];
  if (b.op != "get_attr") return std::nullopt;
  auto it = g.constants.find(std::get<std::string>(b.args.at(0)));
  const SymExpr lq = g.info(m.q).shape.at(2), lkv = g.info(m.k).shape.at(2);
  if (it == g.constants.end() || !is_causal_buffer(it->second) || !lkv.is_constant() ||
      it->second.shape[0] != lkv.constant())
    return std::nullopt;
  const SymExpr* start = std::get_if<SymExpr>(&s.args[2]);
  const SymExpr* end = std::get_if<SymExpr>(&s.args[3]);
  if (!start || !end || !(*start == *m.start_pos) || !(*end == *start + lq)) return std::nullopt;
  return *start;
}

namespace {

// SDPACustom.forward on the module's inputs: returns its [B, Lq, dim] output.
ValueRef emit_sdpa_custom(Graph& out, const SdpaModule& m, const Graph& source, const GraphRewriter& rw,
                          const SwapConfig& cfg, const ShapeEnv& env) {
  const DType input_dtype = source.info(m.q).dtype;
  auto to_bshd_f32 = [&](ValueRef x, const std::string& name) {
    const ValueInfo& in = out.info(x);
    SymShape s = in.shape;
    std::swap(s[1], s[2]);
    ValueRef t = out.call("aten.transpose.int", {x, int64_t{1}, int64_t{2}}, {}, {{in.dtype, s}}, name);
    // x.to(dtype=torch.float): export records a copy only where the dtype changes.
    if (in.dtype == DType::f32) return t;
    return out.call("aten._to_copy.default", {t}, {{"dtype", DType::f32}}, {{DType::f32, s}}, name + "_f32");
  };
  ValueRef q = to_bshd_f32(rw.map(m.q), "q_bshd");
  ValueRef k = to_bshd_f32(rw.map(m.k), "k_bshd");
  ValueRef v = to_bshd_f32(rw.map(m.v), "v_bshd");
  meta_check_qkv(out, q, k, v, env);  // f32 casts: every tree's Meta kernel takes them
  std::vector<Arg> args;
  if (cfg.use_attention_mask) {
    if (!m.mask) throw std::runtime_error("SDPACustom(use_attention_mask=True) needs the module's mask");
    ValueRef mask = rw.map(*m.mask);
    meta_check_mask(out.info(mask));
    args = {q, k, v, int64_t{0}, mask, int64_t{0}, false};
  } else {
    if (!m.start_pos) throw std::runtime_error("SDPACustom reads input_pos[0]: the graph has no input_pos");
    args = {q, k, v, *m.start_pos, None{}, int64_t{0}, true};
  }
  ValueRef y = out.call(kCustomSdpaOp, args, {}, {out.info(q)}, "custom_sdpa");
  const Node& view = source.nodes[m.view];
  const ValueInfo& merged = view.outputs.at(0);
  ValueRef o = out.call("aten.view.default", {y, view.args.at(1)}, {}, {{DType::f32, merged.shape}}, "view");
  if (input_dtype == DType::f32) return o;
  return out.call("aten._to_copy.default", {o}, {{"dtype", input_dtype}}, {{input_dtype, merged.shape}}, "to");
}

}  // namespace

Decision ReplaceSdpaWithCustomOpPass::contract_guard(const Graph& g, const SdpaModule& m,
                                                     const ShapeEnv& env) const {
  GuardContext guard(env, "%" + g.nodes[m.sdpa].name);
  auto rule = [&](SwapRule r, bool ok, const std::string& detail) {
    const bool weak = config_.weakened == r;
    return guard.rule(rule_name(r), ok || weak, weak ? detail + " (rule weakened)" : detail);
  };
  const SymExpr lq = g.info(m.q).shape.at(2), lkv = g.info(m.k).shape.at(2);
  rule(SwapRule::query_length, guard.known(Fact{lq, Rel::ge, SymExpr(1)}), "Lq " + lq.str() + " >= 1");
  if (!config_.use_attention_mask) {
    const std::optional<SymExpr> start = causal_slice_start(g, m);
    rule(SwapRule::causal_slice, start.has_value(),
         start ? "the mask is the causal buffer's rows [" + start->str() + ", " + start->str() + " + Lq)"
               : std::string("the mask is not the causal buffer's rows at input_pos[0], and the swap drops it"));
    const SymExpr sp = m.start_pos.value_or(SymExpr(0));
    rule(SwapRule::cache_bounds, guard.known(Fact{sp + lq, Rel::le, lkv}),
         "start_pos " + sp.str() + " + Lq " + lq.str() + " <= Lkv " + lkv.str());
    return guard.finish();
  }
  const ValueInfo* mask = m.mask ? &g.info(*m.mask) : nullptr;
  const bool rank2 = mask && mask->shape.size() == 2;
  rule(SwapRule::mask_rank, rank2, mask ? "mask " + shape_str(mask->shape) : std::string("no mask"));
  rule(SwapRule::mask_dtype, mask && mask->dtype == DType::f32,
       mask ? std::string("mask dtype ") + dtype_name(mask->dtype) : std::string("no mask"));
  // Rows and columns, whatever the rank (mask-rank is the rank's rule).
  const size_t r = mask ? mask->shape.size() : 0;
  const bool shape = r >= 2 && guard.known(Fact{mask->shape[r - 2], Rel::eq, lq}) &&
                     guard.known(Fact{mask->shape[r - 1], Rel::eq, lkv});
  rule(SwapRule::mask_shape, shape,
       (mask ? "mask " + shape_str(mask->shape) : std::string("no mask")) + " vs [" + lq.str() + ", " + lkv.str() + "]");
  return guard.finish();
}

Decision ReplaceSdpaWithCustomOpPass::decide(const Graph& g, const SdpaModule& m, const ShapeEnv& env) const {
  if (config_.policy == GuardPolicy::contract) return contract_guard(g, m, env);
  GuardContext guard(env, "%" + g.nodes[m.sdpa].name);
  guard.rule("sdpa-module", true, "replace_sdpa_with_custom_op swaps every SDPA module, unconditionally");
  return guard.finish();
}

Pass::Result ReplaceSdpaWithCustomOpPass::run(const Graph& g, const ShapeEnv& env,
                                              const RewriteControl& control) const {
  Result result;
  std::map<int, const SdpaModule*> swapped_at;  // SDPA node -> its module, for the swapped ones
  std::set<int> removed;                        // every node of a swapped module
  const std::vector<SdpaModule> modules = find_sdpa_modules(g);
  for (const SdpaModule& m : modules) {
    Decision d = decide(g, m, env);
    d.forced = !d.rewrite && control.rewrites(d);
    const bool swap = control.rewrites(d);
    result.decisions.push_back(d);
    if (!swap) continue;
    swapped_at[m.sdpa] = &m;
    removed.insert({m.sdpa, m.repeat_k, m.repeat_v, m.transpose, m.contiguous, m.view});
  }
  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const int index = static_cast<int>(i);
    auto it = swapped_at.find(index);
    if (it != swapped_at.end()) {
      const SdpaModule& m = *it->second;
      rw.replace(g.nodes[m.view], {emit_sdpa_custom(rw.out(), m, g, rw, config_, env)});
    } else if (!removed.count(index)) {
      rw.copy(g.nodes[i]);
    }
  }
  result.graph = rw.finish();
  return result;
}

}  // namespace sdpa::llm
