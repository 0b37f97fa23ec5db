#include "backends/cortex_m/scale_constant.h"

#include <cmath>

#include "backends/common/sdpa_entry.h"
#include "backends/cortex_m/cortex_m_ops.h"

namespace sdpa::cortex_m {
namespace {

// The SDPA call's scale: its keyword, else 1/sqrt(E) of a static q.
std::vector<GraphConstant> call_scale(const Graph& g, const Node& n) {
  if (const Arg* s = n.kwarg("scale"); s && std::holds_alternative<double>(*s))
    return {{"scale", std::get<double>(*s), DType::f32, {{n.name, "scale"}}}};
  const auto* q = n.args.empty() ? nullptr : std::get_if<ValueRef>(&n.args[0]);
  if (!q || g.info(*q).shape.empty() || !g.info(*q).shape.back().is_constant()) return {};
  return {{"scale", 1.0 / std::sqrt(static_cast<double>(g.info(*q).shape.back().constant())), DType::f32}};
}

// The int8 constant of a quantized MUL as it dequantizes, or none.
bool dequantized_constant(const Graph& g, const Node& n, double& value) {
  const auto* c = n.args.size() > 2 ? std::get_if<ValueRef>(&n.args[2]) : nullptr;
  if (!c || g.nodes.at(c->node).op != "get_attr") return false;
  auto it = g.constants.find(g.nodes[c->node].name);
  if (it == g.constants.end() || it->second.numel() == 0 || !it->second.qparams) return false;
  const QParams& q = *it->second.qparams;
  value = (it->second.data[0] - static_cast<double>(q.zero_point)) * q.scale;
  return true;
}

}  // namespace

std::vector<GraphConstant> scale_constants(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op == kSdpaOp) return call_scale(g, n);
  GraphConstant scale{"scale", 1.0, DType::f32};
  bool found = false;
  for (const Node& n : g.nodes) {
    double factor = 0;
    if (n.op == "aten.mul.Scalar" && n.args.size() > 1 && std::holds_alternative<double>(n.args[1])) {
      factor = std::get<double>(n.args[1]);
    } else if (n.op != kMulOp || !dequantized_constant(g, n, factor)) {
      continue;
    }
    scale.value *= factor;
    found = true;
  }
  if (!found) return {};
  return {scale};
}

}  // namespace sdpa::cortex_m
