#include "backends/cortex_m/cortex_m_invariants.h"

#include <cmath>
#include <limits>
#include <set>

#include "backends/common/sdpa_entry.h"
#include "backends/cortex_m/cortex_m_ops.h"
#include "backends/cortex_m/stage_reference.h"
#include "harness/ir/graph_printer.h"

namespace sdpa::cortex_m {
namespace {

const std::set<std::string> kViewOps = {
    "aten.reshape.default", "aten.view.default",      "aten._unsafe_view.default", "aten.transpose.int",
    "aten.permute.default", "aten.contiguous.default", "aten.clone.default",       "aten.unsqueeze.default",
    "aten.squeeze.dims",    "aten.expand.default",     kTransposeOp};
const std::set<std::string> kFloatOps = {"aten.bmm.default",      "aten.matmul.default",     "aten.mul.Scalar",
                                         "aten.mul.Tensor",       "aten._softmax.default",   "aten.softmax.int",
                                         "aten._safe_softmax.default", "aten.add.Tensor", kSdpaOp};

std::string where(const Node& n) { return "%" + n.name + " (" + n.op + ")"; }

void check_dtypes(const Graph& g, std::vector<std::string>& out) {
  for (const Node& n : g.nodes) {
    if (n.op == "placeholder" || n.op == "get_attr" || n.outputs.empty()) continue;
    std::vector<const ValueInfo*> in;
    for (size_t i = 0; i < n.args.size(); ++i)
      if (const auto* v = std::get_if<ValueRef>(&n.args[i])) {
        // quantized_linear's bias is int32 (scale S_in·S_w).
        if (n.op == kQuantizedLinearOp && i == 2) {
          if (g.info(*v).dtype != DType::i32)
            return out.push_back(where(n) + ": bias " + print_value_info(g.info(*v)) + ", the op takes int32");
          continue;
        }
        in.push_back(&g.info(*v));
      }
    const ValueInfo& o = n.outputs[0];
    const bool cortex = n.op.rfind("cortex_m.", 0) == 0;
    const DType want_in = n.op == kQuantizeOp ? DType::f32 : DType::i8;
    const DType want_out = n.op == kDequantizeOp ? DType::f32 : DType::i8;
    if (cortex) {
      for (const ValueInfo* v : in)
        if (v->dtype != want_in || (want_in == DType::i8 && !v->qparams))
          return out.push_back(where(n) + ": reads " + print_value_info(*v) + ", the op takes " + dtype_name(want_in) +
                               (want_in == DType::i8 ? " with qparams" : ""));
      if (o.dtype != want_out || (want_out == DType::i8 && !o.qparams))
        return out.push_back(where(n) + ": writes " + print_value_info(o) + ", the op writes " + dtype_name(want_out));
    } else if (kViewOps.count(n.op) && !in.empty()) {
      if (o.dtype != in[0]->dtype || !(o.qparams == in[0]->qparams))
        return out.push_back(where(n) + ": a view op turns " + print_value_info(*in[0]) + " into " + print_value_info(o));
    } else if (kFloatOps.count(n.op)) {
      for (const ValueInfo* v : in)
        if (v->dtype != DType::f32 && v->dtype != DType::b8)  // a bool attn_mask aside
          return out.push_back(where(n) + ": reads " + print_value_info(*v) + " where the portable kernel takes f32");
    }
  }
}

const Node* first(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes)
    if (n.op == op) return &n;
  return nullptr;
}

bool proportional(double s_in, int64_t z_in, double s_out, int64_t z_out, double scale) {
  return std::fabs(s_out / (s_in * scale) - 1) <= 1e-6 && z_in == z_out;
}

void check_counts(const InvariantContext& ctx, const Case& c, const Graph& g, std::vector<std::string>& out) {
  // shared-decomp's matmuls of a broadcast head (Hkv = 1 without enable_gqa
  // at rank 5) are left to aten.matmul by MatmulToBmmPass.
  const int bmm = g.count(kBmmOp) + g.count("aten.bmm.default") +
                  (ctx.policy == Policy::shared_decomp ? g.count("aten.matmul.default") : 0);
  const int softmax = g.count(kSoftmaxOp) + g.count("aten._softmax.default") + g.count("aten.softmax.int") +
                      g.count("aten._safe_softmax.default");
  const int muls = g.count(kMulOp) + g.count("aten.mul.Scalar");
  const int want_muls = ctx.policy == Policy::shared_decomp ? 2 : 1;
  if (bmm != 2) out.push_back("the decomposed call holds " + std::to_string(bmm) + " bmm, not 2");
  if (softmax != 1) out.push_back("the decomposed call holds " + std::to_string(softmax) + " softmax, not 1");
  if (ctx.quantized && ctx.policy == Policy::decompose_fold) {
    // Folded (none left), or kept where the fold's rules reject it: not a
    // positive scale with proportional qparams.
    // The MUL left: a quantized one, or the fp32 one CortexMAddMulCheck rejects;
    // the softmax reads its output's qparams either way.
    const Node* mul = first(g, kMulOp);
    if (!mul) mul = first(g, "aten.mul.Scalar");
    const Node* bmm_node = first(g, kBmmOp);
    const Node* softmax = first(g, kSoftmaxOp);
    if (muls > 1) out.push_back("the decomposed call holds " + std::to_string(muls) + " scale MULs, not 1 or 0");
    if (mul && bmm_node && c.effective_scale() > 0 && g.count(kSoftmaxOp) == 1 &&
        proportional(std::get<double>(*bmm_node->kwarg("output_scale")), std::get<int64_t>(bmm_node->args.at(4)),
                     std::get<double>(*softmax->kwarg("input_scale")), std::get<int64_t>(softmax->args.at(2)),
                     c.effective_scale()))
      out.push_back("%" + mul->name + " has proportional qparams and a positive scale but was not folded");
    return;
  }
  if (muls != want_muls)
    out.push_back("the decomposed call holds " + std::to_string(muls) + " scale MUL(s), policy " +
                  policy_name(ctx.policy) + " leaves " + std::to_string(want_muls));
}

// out_scale == in_scale·scale within 1e-6 relative and equal zero points, where
// in is the score bmm's output and out the softmax's input (the MUL's output).
void check_proportional(const Case& c, const Graph& g, std::vector<std::string>& out) {
  const double scale = c.effective_scale();
  const Node* bmm = first(g, kBmmOp);
  if (!bmm || !(scale > 0)) return;
  const double s_in = std::get<double>(*bmm->kwarg("output_scale"));
  const int64_t z_in = std::get<int64_t>(bmm->args.at(4));
  double s_out;
  int64_t z_out;
  if (const Node* mul = first(g, kMulOp)) {
    s_out = std::get<double>(*mul->kwarg("output_scale"));
    z_out = std::get<int64_t>(mul->args.at(4));
  } else if (const Node* sm = first(g, kSoftmaxOp)) {
    s_out = std::get<double>(*sm->kwarg("input_scale"));
    z_out = std::get<int64_t>(sm->args.at(2));
  } else {
    return;
  }
  // A range so small that the observer's eps floor sets the scale cannot be
  // proportional; the fold's own isclose rule then keeps the MUL.
  const double eps = std::numeric_limits<float>::epsilon();
  if (s_in * scale <= eps || s_out <= eps || s_in <= eps) return;
  const double rel = std::fabs(s_out / (s_in * scale) - 1);
  if (rel > 1e-6 || z_in != z_out) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "qparams around the scale MUL are not proportional: out (%.9g, %lld), in (%.9g, %lld) times scale "
                  "%.9g gives %.9g (relative error %.3g, tolerance 1e-6; zero points must be equal)",
                  s_out, static_cast<long long>(z_out), s_in, static_cast<long long>(z_in), scale, s_in * scale, rel);
    out.push_back(buf);
  }
}

void check_stages(const InvariantContext& ctx, const Graph& g, Violations& out) {
  if (g.count(kBmmOp) + g.count(kMulOp) + g.count(kSoftmaxOp) + g.count(kQuantizedLinearOp) == 0) return;
  std::optional<Execution> run;
  try {
    run = interpret(g, ctx.kernels, ctx.inputs, RunContext{}, /*keep_values=*/true);
  } catch (const std::exception&) {
    return;  // the accuracy stage reports the kernel's error
  }
  const StageBreaches b = stage_breaches(g, *run);
  if (b.kernel) out.kernel.push_back({ctx.kernels.name(), b.kernel->node, b.kernel->detail});
  if (b.lowering) out.structural.push_back(b.lowering->detail);
}

}  // namespace

Violations cortex_m_invariants(const InvariantContext& ctx, const Case& c, const Graph& before, const Graph& after) {
  Violations v;
  std::vector<std::string>& out = v.structural;
  const ShapeEnv env = c.shape_env();
  bool decomposed = false;
  for (int i = 0; i < static_cast<int>(before.nodes.size()); ++i) {
    const Node& n = before.nodes[i];
    if (n.op != kSdpaOp || ctx.policy == Policy::none) continue;
    const bool left = after.find(n.name) >= 0 && after.nodes[after.find(n.name)].op == kSdpaOp;
    const Decision d = ctx.pass.guard(before, i, env);
    if (left && d.rewrite) out.push_back("%" + n.name + " (" + n.op + ") is left although the guard accepted it");
    if (left && !d.rewrite && print_graph(after) != print_graph(before))
      out.push_back("%" + n.name + " is ineligible (" + d.deciding_rule + ") but the graph around it changed");
    decomposed = decomposed || !left;
  }
  check_dtypes(after, out);
  if (decomposed) {
    check_counts(ctx, c, after, out);
    if (ctx.quantized && ctx.policy != Policy::shared_decomp) check_proportional(c, after, out);
  }
  if (ctx.quantized) check_stages(ctx, after, v);
  return v;
}

}  // namespace sdpa::cortex_m
